import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { Worker } from 'node:worker_threads';
import fc from 'fast-check';
import { redactCredentials, promptExcerpt } from '../../../src/held-calls/redact.js';

// Fake secrets are composed here from a seeded generator and split prefixes, so no
// live-looking key sits verbatim in the source.
function randomChars(length: number, alphabet: string, seed: number): string {
  let state = seed >>> 0 || 1;
  let out = '';
  for (let i = 0; i < length; i += 1) {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    out += alphabet[state % alphabet.length];
  }
  return out;
}
const UPPER = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
const LOWER = 'abcdefghijklmnopqrstuvwxyz';
const DIGITS = '0123456789';
const ALNUM = UPPER + LOWER + DIGITS;
/** Random alphanumerics that surely contain an upper, a lower and a digit. */
const rnd = (length: number, seed: number, alphabet = ALNUM): string =>
  'Q7x' + randomChars(length - 3, alphabet, seed);
const b64url = (value: object): string => Buffer.from(JSON.stringify(value)).toString('base64url');

interface Sample {
  format: string;
  kind: string;
  /** Text containing the secret. */
  text: string;
  /** Part of the secret that must not survive. */
  secret: string;
}

const openaiMarker = ['T3Bl', 'bkFJ'].join('');
const awsId = ['AK', 'IA'].join('') + randomChars(16, UPPER + '234567', 7);
const awsSecret = rnd(40, 8, ALNUM + '/+');
const jwt = [b64url({ alg: 'HS256', typ: 'JWT' }), b64url({ sub: 'eng/dev', exp: 1900000000 }), rnd(43, 9)].join('.');
const pemBody = Array.from({ length: 6 }, (_, i) => rnd(64, 100 + i, ALNUM + '+/')).join('\n');
const dash5 = '-'.repeat(5);

const SAMPLES: Sample[] = [
  { format: 'OpenAI legacy key', kind: 'openai-key', secret: rnd(20, 1) + openaiMarker + rnd(20, 2), text: '' },
  { format: 'OpenAI project key', kind: 'openai-key', secret: 'proj-' + rnd(74, 3, ALNUM + '_-') + openaiMarker + rnd(74, 4), text: '' },
  { format: 'OpenAI service account key', kind: 'openai-key', secret: 'svcacct-' + rnd(58, 5) + openaiMarker + rnd(58, 6), text: '' },
  { format: 'OpenAI admin key', kind: 'openai-key', secret: 'admin-' + rnd(58, 10) + openaiMarker + rnd(58, 11), text: '' },
  { format: 'Anthropic API key', kind: 'anthropic-key', secret: 'api03-' + rnd(93, 12, ALNUM + '_-') + 'AA', text: '' },
  { format: 'Anthropic admin key', kind: 'anthropic-key', secret: 'admin01-' + rnd(93, 13) + 'AA', text: '' },
  { format: 'Anthropic OAuth token', kind: 'anthropic-key', secret: 'oat01-' + rnd(93, 14) + 'AA', text: '' },
  { format: 'AWS access key id', kind: 'aws-access-key-id', secret: awsId, text: `aws_access_key_id = ${awsId}` },
  {
    format: 'AWS secret next to its key id',
    kind: 'aws-secret-access-key',
    secret: awsSecret,
    text: `creds: ${awsId} ${awsSecret} us-east-1`,
  },
  { format: 'GitHub personal token', kind: 'github-token', secret: 'ghp_' + rnd(36, 15), text: '' },
  { format: 'GitHub OAuth token', kind: 'github-token', secret: 'gho_' + rnd(36, 16), text: '' },
  { format: 'GitHub user-to-server token', kind: 'github-token', secret: 'ghu_' + rnd(36, 17), text: '' },
  { format: 'GitHub server-to-server token', kind: 'github-token', secret: 'ghs_' + rnd(36, 18), text: '' },
  { format: 'GitHub refresh token', kind: 'github-token', secret: 'ghr_' + rnd(36, 19), text: '' },
  { format: 'GitHub fine-grained token', kind: 'github-token', secret: 'github_pat_' + rnd(22, 20) + '_' + rnd(59, 21), text: '' },
  { format: 'Slack bot token', kind: 'slack-token', secret: ['xo', 'xb-'].join('') + '1234567890-2345678901-' + rnd(24, 22), text: '' },
  { format: 'Slack user token', kind: 'slack-token', secret: ['xo', 'xp-'].join('') + '1234567890-2345678901-3456789012-' + rnd(32, 23), text: '' },
  { format: 'Slack app token', kind: 'slack-token', secret: 'xapp-1-A0' + rnd(10, 24) + '-1234567890-' + rnd(40, 25), text: '' },
  {
    format: 'Slack webhook',
    kind: 'slack-webhook',
    secret: 'T0' + rnd(8, 26, UPPER + DIGITS) + '/B0' + rnd(8, 27, UPPER + DIGITS) + '/' + rnd(24, 28),
    text: '',
  },
  { format: 'Google API key', kind: 'google-api-key', secret: 'AI' + 'za' + rnd(35, 29, ALNUM + '_-'), text: '' },
  { format: 'Reins personal access token', kind: 'reins-token', secret: 'reins_' + 'pat_' + rnd(43, 20, UPPER + LOWER), text: '' },
  { format: 'Reins agent key', kind: 'reins-token', secret: 'reins_' + 'agent_' + rnd(43, 20, UPPER + LOWER), text: '' },
  { format: 'Hugging Face token', kind: 'huggingface-token', secret: 'hf_' + rnd(34, 30, UPPER + LOWER), text: '' },
  { format: 'GitLab personal token', kind: 'gitlab-token', secret: 'glpat-' + rnd(20, 31), text: '' },
  { format: 'npm token', kind: 'npm-token', secret: 'npm_' + rnd(36, 32), text: '' },
  { format: 'Stripe live secret key', kind: 'stripe-key', secret: ['sk', 'live', rnd(24, 33)].join('_'), text: '' },
  { format: 'Stripe restricted key', kind: 'stripe-key', secret: ['rk', 'live', rnd(24, 34)].join('_'), text: '' },
  { format: 'JWT', kind: 'jwt', secret: jwt, text: `session=${jwt}; Path=/` },
  {
    format: 'PEM private key block',
    kind: 'private-key',
    secret: pemBody.slice(0, 64),
    text: `key:\n${dash5}BEGIN RSA PRIVATE KEY${dash5}\n${pemBody}\n${dash5}END RSA PRIVATE KEY${dash5}\nthanks`,
  },
  {
    format: 'OpenSSH private key block cut off before its END line',
    kind: 'private-key',
    secret: pemBody.slice(65, 129),
    text: `${dash5}BEGIN OPENSSH PRIVATE KEY${dash5}\n${pemBody}`,
  },
  { format: 'Bearer token', kind: 'bearer-token', secret: rnd(32, 35, ALNUM + '._-'), text: '' },
  { format: 'Authorization header (Basic)', kind: 'authorization', secret: 'dXNlcjpwYXNzd29yZA', text: '' },
  { format: 'x-api-key header', kind: 'authorization', secret: 'rns_' + rnd(24, 36), text: '' },
  { format: 'password= value', kind: 'secret', secret: 'hunter2hunter', text: '' },
  { format: 'JSON "password" member', kind: 'secret', secret: 'correct-horse-9', text: '' },
  { format: 'secret= value', kind: 'secret', secret: rnd(16, 37), text: '' },
  { format: 'api_key= value', kind: 'secret', secret: rnd(24, 38), text: '' },
  { format: 'token= value', kind: 'secret', secret: rnd(24, 39), text: '' },
  { format: 'env var ending in _PASSWORD', kind: 'secret', secret: 'Pg-pass-4-prod', text: '' },
  { format: 'password in a URL', kind: 'url-password', secret: 'S3cr3tPw', text: '' },
];

// Place each secret the way it would appear in a prompt.
for (const sample of SAMPLES) {
  if (sample.text !== '') continue;
  const s = sample.secret;
  switch (sample.kind) {
    case 'openai-key':
      sample.secret = 'sk-' + s;
      sample.text = `OPENAI_API_KEY=${sample.secret} then call the API`;
      break;
    case 'anthropic-key':
      sample.secret = 'sk-' + 'ant-' + s;
      sample.text = `export ANTHROPIC_API_KEY="${sample.secret}"`;
      break;
    case 'slack-webhook':
      sample.text = `post to https://hooks.slack.com/services/${s} when done`;
      break;
    case 'bearer-token':
      sample.text = `curl -H "Authorization: Bearer ${s}" https://api.example.com`;
      break;
    case 'authorization':
      sample.text = sample.format.startsWith('x-api-key') ? `x-api-key: ${s}\nanthropic-version: 2023-06-01` : `Authorization: Basic ${s}\r\nHost: x`;
      break;
    case 'secret':
      if (sample.format.startsWith('JSON')) sample.text = `{"user": "dev", "password": "${s}"}`;
      else if (sample.format.startsWith('env var')) sample.text = `DB_PASSWORD=${s}\nDB_HOST=db`;
      else sample.text = `${sample.format.split('=')[0]}=${s}&next=1`;
      break;
    case 'url-password':
      sample.text = `DATABASE_URL=postgres://reins:${s}@db.internal:5432/reins`;
      break;
    default:
      sample.text = `here is my token ${s} please use it`;
  }
}

describe('redactCredentials', () => {
  for (const sample of SAMPLES) {
    test(`redacts a ${sample.format}`, () => {
      const out = redactCredentials(sample.text);
      assert.ok(sample.text.includes(sample.secret), 'sample is well formed');
      assert.ok(out.includes(`[REDACTED:${sample.kind}]`), out);
      assert.ok(!out.includes(sample.secret), `secret survived: ${out}`);
    });
  }

  test('keeps the text around a secret', () => {
    const key = 'ghp_' + rnd(36, 50);
    assert.equal(redactCredentials(`use ${key}, not mine.`), 'use [REDACTED:github-token], not mine.');
    assert.equal(
      redactCredentials(`curl -H 'Authorization: Bearer ${'sk-' + rnd(40, 51)}'`),
      `curl -H 'Authorization: Bearer [REDACTED:openai-key]'`,
    );
  });

  test('redacts several secrets in one text', () => {
    const text = SAMPLES.map((s) => s.text).join('\n---\n');
    const out = redactCredentials(text);
    for (const sample of SAMPLES) assert.ok(!out.includes(sample.secret), sample.format);
  });

  const negatives: Array<[string, string]> = [
    ['ordinary prose', 'Please summarise the quarterly report and list the open risks.'],
    ['hyphenated words after sk-', 'We use sk-learn-compatible-estimators-and-pipelines here.'],
    ['a word ending in sk', 'the task-management-system-for-teams-and-projects'],
    ['a git SHA', 'fixed in commit 3f2a9c8e1b7d4a6f0e5c2b9a8d7f6e5c4b3a2d1f'],
    ['a UUID', 'request 123e4567-e89b-12d3-a456-426614174000 failed'],
    ['short ids', 'ids req_123, usr_42, sk-1, hf_hub, npm_config_cache, ghp_short'],
    ['a 40-character base64 string with no AWS key id near it', `digest ${rnd(40, 60, ALNUM + '/+')} ok`],
    ['prose about Bearer authentication', 'Bearer authentication sends the token in a header.'],
    ['prose about the Authorization header', 'The Authorization: header must be set by the client.'],
    ['type annotations', 'interface Login { password: string; token: string | null }'],
    ['token counts', 'max_tokens: 1024, input_tokens=12, token: 42'],
    ['a public certificate', `${dash5}BEGIN CERTIFICATE${dash5}\nMIIB\n${dash5}END CERTIFICATE${dash5}`],
    ['a URL without credentials', 'https://api.example.com:8443/v1/models?x=1'],
    ['placeholders', 'password=******** api_key=$OPENAI_API_KEY secret=${SECRET}'],
  ];
  for (const [what, text] of negatives) {
    test(`leaves ${what} alone`, () => {
      assert.equal(redactCredentials(text), text);
    });
  }

  test('is idempotent: redacting twice changes nothing more', () => {
    const once = redactCredentials(SAMPLES.map((s) => s.text).join('\n'));
    assert.equal(redactCredentials(once), once);
  });
});

describe('promptExcerpt', () => {
  test('returns short text whole, redacted', () => {
    const key = 'npm_' + rnd(36, 70);
    assert.equal(promptExcerpt(`publish with ${key}`, 200), 'publish with [REDACTED:npm-token]');
  });

  test('cuts long text to maxChars, ellipsis included', () => {
    const out = promptExcerpt('a'.repeat(500), 100);
    assert.equal(out.length, 100);
    assert.ok(out.endsWith('…'));
  });

  test('never cuts through a marker', () => {
    const key = 'glpat-' + rnd(20, 71);
    const text = `abc ${key} def`;
    for (let max = 0; max <= 40; max += 1) {
      const out = promptExcerpt(text, max);
      assert.ok(out.length <= max, `length ${out.length} > ${max}`);
      assert.doesNotMatch(out, /\[R[A-Z]*:?[a-z-]*…?$/, `partial marker in ${JSON.stringify(out)}`);
    }
  });

  test('never splits a surrogate pair', () => {
    const out = promptExcerpt('😀'.repeat(10), 4);
    assert.equal(out, '😀…');
  });

  test('property: an excerpt never holds any part of a secret, wherever the cut falls', () => {
    const filler = fc.string({ unit: fc.constantFrom('a', 'b', 'c', ' ', '\n'), maxLength: 120 });
    fc.assert(
      fc.property(fc.constantFrom(...SAMPLES), filler, filler, fc.integer({ min: 0, max: 600 }), (sample, before, after, max) => {
        const out = promptExcerpt(`${before} ${sample.text} ${after}`, max);
        if (out.length > max) return false;
        // Any 8-character piece of the secret that could not come from the filler or the sample's context.
        for (let i = 0; i + 8 <= sample.secret.length; i += 1) {
          const piece = sample.secret.slice(i, i + 8);
          if (/[^abc \n]/.test(piece) && !sample.text.replace(sample.secret, '').includes(piece) && out.includes(piece)) {
            return false;
          }
        }
        return true;
      }),
      { numRuns: 500 },
    );
  });
});

describe('linear time', () => {
  // Each input is built to make a backtracking pattern quadratic or worse: a prefix
  // repeated so that every position starts a failing attempt. Linear, 1 MB takes tens of
  // milliseconds; quadratic, it takes many minutes. The cases run in a worker so that a
  // regression fails at the deadline instead of hanging the suite (terminating a worker
  // interrupts a running regex).
  const MB = 1 << 20;
  // Generous, so that a busy machine never fails it: linear, a case takes a fraction of a second even then.
  const DEADLINE_MS = 20_000;
  const fill = (unit: string): string => unit.repeat(Math.ceil(MB / unit.length)).slice(0, MB);
  const adversarial: Array<[string, string]> = [
    ['one long token run', fill('a')],
    ['sk- repeated', fill('sk-')],
    ['Anthropic prefix repeated', fill('sk-ant-api03-')],
    ['JWT header start repeated', fill('eyJ')],
    ['JWT segments without a signature dot', fill('eyJaaaaaaaaa.eyJaaaaaaaa')],
    ['Bearer repeated', fill('Bearer ')],
    ['Bearer with long whitespace', fill('Bearer            x')],
    ['Authorization: repeated', fill('Authorization: Bearer ')],
    ['password= repeated', fill('password=')],
    ['JSON password member opened repeatedly', fill('"password": "')],
    ['PEM BEGIN without END', fill(`${dash5}BEGIN RSA PRIVATE KEY${dash5}`)],
    ['PEM BEGIN with other END lines', fill(`${dash5}BEGIN PRIVATE KEY${dash5}\n${dash5}END CERTIFICATE${dash5}\n`)],
    ['AWS key ids back to back', fill(`${awsId} `)],
    ['AWS key ids among long runs', fill(`${awsId} ${'A'.repeat(500)} `)],
    ['URL scheme separators', fill('://')],
    ['URL user parts without @', fill('://user:')],
    ['Slack webhook prefix repeated', fill('hooks.slack.com/services/')],
    ['base64 alphabet', fill('Ab3+/')],
    ['whitespace', fill(' \n')],
    ['YAML name then newline repeated', fill('password:\n')],
    ['YAML name then a long indented run', fill(`password:\n${' '.repeat(4000)}`)],
    ['YAML block scalar indicator repeated', fill('secret: |')],
    ['camelCase names repeated', fill('aPassword=')],
    ['curl -u repeated', fill('-u ')],
    ['curl -u user without a password', fill('-u user:')],
    ['URL with an empty user repeated', fill('://:')],
  ];

  const workerCode = `
    const { parentPort, workerData } = require('node:worker_threads');
    import(workerData.tsxApi)
      .then(({ register }) => { register(); return import(workerData.module); })
      .then(({ promptExcerpt }) => {
        parentPort.postMessage({ ready: true });
        for (const [name, text] of workerData.cases) {
          const out = promptExcerpt(text, 280);
          parentPort.postMessage({ name, length: out.length });
        }
      });
  `;

  /** Runs the cases in order; resolves with the first one that missed the deadline, or null. */
  function firstCaseOverDeadline(): Promise<string | null> {
    const worker = new Worker(workerCode, {
      eval: true,
      workerData: {
        tsxApi: import.meta.resolve('tsx/esm/api'),
        module: new URL('../../../src/held-calls/redact.ts', import.meta.url).href,
        cases: adversarial,
      },
    });
    return new Promise((resolve, reject) => {
      let next = 0;
      let timer: NodeJS.Timeout | undefined;
      const arm = (): void => {
        clearTimeout(timer);
        const name = adversarial[next]?.[0];
        if (name === undefined) {
          void worker.terminate().then(() => resolve(null));
          return;
        }
        timer = setTimeout(() => void worker.terminate().then(() => resolve(name)), DEADLINE_MS);
      };
      worker.on('message', (message: { ready?: true; name?: string; length?: number }) => {
        if (message.name !== undefined) {
          assert.equal(message.name, adversarial[next]?.[0]);
          assert.ok((message.length ?? Infinity) <= 280);
          next += 1;
        }
        arm();
      });
      worker.on('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
    });
  }

  test(`each 1 MB adversarial input is redacted within ${DEADLINE_MS} ms (${adversarial.length} inputs)`, async () => {
    assert.equal(await firstCaseOverDeadline(), null);
  });
});
