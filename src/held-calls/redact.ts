// Credential redaction for prompt excerpts of held calls (stored and shown to admins).
//
// Every pattern runs in time linear in the input. The shape that makes it so:
// - a token rule starts with a one-character lookbehind that refuses to start inside a
//   run of token characters, so each run is tried from one position at most;
// - after its literal prefix, a rule takes a greedy run of one character class with
//   only a lower bound and nothing required after it, so an attempt either consumes the
//   run or fails within the lower bound; where something must follow a run (the dots
//   of a JWT), the single start per run bounds the backtracking to that run;
// - bounded pieces elsewhere ({1,64}) cap what any one attempt can backtrack over;
// - the unbounded searches (PEM blocks, keys next to AWS key ids) are written as scans.
// A candidate the regex finds may be rejected by a predicate (does it look random?);
// the predicate runs once per non-overlapping candidate, so it stays linear too.

import { MIN_OWN_SECRET_LENGTH } from '../config/config.js';

const marker = (kind: string): string => `[REDACTED:${kind}]`;

/** Start of a run of token characters (`A-Za-z0-9_-`), never inside one. */
const B = '(?<![A-Za-z0-9_-])';

const hasDigit = (s: string): boolean => /[0-9]/.test(s);
const hasLetter = (s: string): boolean => /[A-Za-z]/.test(s);
const hasUpper = (s: string): boolean => /[A-Z]/.test(s);
const hasLower = (s: string): boolean => /[a-z]/.test(s);

/** Random-looking: digits among letters, or a long mixed-case run. Keeps ordinary words out. */
function looksRandom(s: string): boolean {
  return (hasDigit(s) && hasLetter(s)) || (s.length >= 20 && hasUpper(s) && hasLower(s));
}

// Values after `password=` and the like that are types, literals, schemes or placeholders.
const NOT_A_SECRET = new Set([
  'string', 'number', 'boolean', 'bool', 'null', 'none', 'nil', 'undefined', 'true', 'false',
  'required', 'optional', 'empty', 'unset', 'bearer', 'basic', 'digest', 'token', 'bot', 'apikey',
  'negotiate', 'aws4-hmac-sha256',
]);

function isPlaceholder(value: string): boolean {
  return (
    NOT_A_SECRET.has(value.toLowerCase()) ||
    /^[*xX.]+$/.test(value) ||
    /^[$%]/.test(value) ||
    // `YOUR_API_KEY`, `your-password-here`, `<token>`; a key on the next line (`secret:` then `  secretName: tls`)
    /^your[_-]/i.test(value) ||
    value.endsWith(':')
  );
}

// Names whose value is a secret (`password=`, `"api_key": "`, `DB_PASSWORD=`, `export AWS_SECRET_ACCESS_KEY=`).
const SECRET_NAMES =
  '(?:password|passwd|pass|passphrase|client[_-]?secret|secret[_-]?access[_-]?key|secret[_-]?key|secret|' +
  'private[_-]?key|api[_-]?key|access[_-]?key|access[_-]?token|auth[_-]?token|refresh[_-]?token|token)';
// The assignment after the name: `=`, `:`, `:=`, `=>`, quoted or not; a YAML value may start on the next,
// indented line (`password:` then `  hunter2`, or a block scalar `password: |`). One start per name keeps this
// linear: the whitespace runs are backtracked over at most once per occurrence of a name.
const SECRET_ASSIGN = `["']?[ \\t]*(?::=|=>|[:=])[ \\t]*(?:[|>][-+]?[ \\t]*)?(?:\\r?\\n[ \\t]+)?["']?`;
const SECRET_VALUE = `[^\\s"',;&\\[\\]<>(){}]{4,}`;

interface Rule {
  kind: string;
  /** Global. A named group `keep` is kept before the marker; `value` (else the whole match) is tested and replaced. */
  pattern: RegExp;
  accept?: (value: string) => boolean;
}

// Order matters: specific formats first (an Anthropic key also starts `sk-`), then the
// context rules (Bearer, headers, `password=`), whose value classes exclude `[` so they
// never swallow a marker left by an earlier rule.
const RULES: readonly Rule[] = [
  { kind: 'jwt', pattern: new RegExp(`${B}eyJ[A-Za-z0-9_-]{8,}\\.eyJ[A-Za-z0-9_-]{8,}\\.[A-Za-z0-9_-]*`, 'g') },
  { kind: 'anthropic-key', pattern: new RegExp(`${B}sk-ant-[a-z]{2,10}[0-9]{2}-[A-Za-z0-9_-]{20,}`, 'g') },
  {
    kind: 'openai-key',
    pattern: new RegExp(`${B}sk-[A-Za-z0-9_-]{20,}`, 'g'),
    // `T3BlbkFJ` is base64 of "OpenAI", present in issued keys; the fallback catches other `sk-` keys.
    accept: (v) => v.includes('T3BlbkFJ') || looksRandom(v.slice(3)),
  },
  { kind: 'aws-access-key-id', pattern: /(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}(?![A-Za-z0-9])/g },
  { kind: 'github-token', pattern: new RegExp(`${B}gh[pousr]_[A-Za-z0-9]{36,}`, 'g') },
  { kind: 'github-token', pattern: new RegExp(`${B}github_pat_[A-Za-z0-9_]{22,}`, 'g') },
  { kind: 'gitlab-token', pattern: new RegExp(`${B}(?:glpat|glptt|gldt|glrt|glcbt|glsoat)-[A-Za-z0-9_-]{20,}`, 'g') },
  { kind: 'slack-token', pattern: new RegExp(`${B}(?:xox[abposr]|xapp)-[A-Za-z0-9-]{10,}`, 'g'), accept: hasDigit },
  { kind: 'slack-webhook', pattern: /hooks\.slack\.com\/(?:services|workflows|triggers)\/[A-Za-z0-9_\/+-]{8,}/g },
  { kind: 'google-api-key', pattern: new RegExp(`${B}AIza[A-Za-z0-9_-]{30,}`, 'g') },
  { kind: 'google-oauth-token', pattern: new RegExp(`${B}ya29\\.[A-Za-z0-9_-]{20,}`, 'g') },
  { kind: 'google-client-secret', pattern: new RegExp(`${B}GOCSPX-[A-Za-z0-9_-]{20,}`, 'g') },
  {
    kind: 'huggingface-token',
    pattern: new RegExp(`${B}hf_[A-Za-z0-9]{30,}`, 'g'),
    accept: (v) => hasUpper(v) && hasLower(v.slice(3)),
  },
  // Reins' own credentials (src/identity/tokens.ts, console session cookies): 32 random bytes, base64url.
  { kind: 'reins-token', pattern: new RegExp(`${B}reins_(?:pat|agent|sensor|sess)_[A-Za-z0-9_-]{32,}`, 'g') },
  { kind: 'npm-token', pattern: new RegExp(`${B}npm_[A-Za-z0-9]{36,}`, 'g') },
  { kind: 'stripe-key', pattern: new RegExp(`${B}(?:sk|rk)_(?:live|test|prod)_[A-Za-z0-9]{10,}`, 'g') },
  { kind: 'sendgrid-key', pattern: new RegExp(`${B}SG\\.[A-Za-z0-9_-]{22}\\.[A-Za-z0-9_-]{43}`, 'g') },
  { kind: 'pypi-token', pattern: new RegExp(`${B}pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}`, 'g') },
  { kind: 'digitalocean-token', pattern: new RegExp(`${B}do[opr]_v1_[a-f0-9]{64}`, 'g') },
  { kind: 'shopify-token', pattern: new RegExp(`${B}shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}`, 'g') },
  {
    kind: 'url-password',
    pattern: /(?<keep>:\/\/[^\s:\/@\[\]]{0,64}:)(?<value>[^\s\/@\[\]]{1,128})(?=@)/g,
  },
  {
    // curl -u user:password / --user user:password
    kind: 'basic-auth',
    pattern: /(?<![A-Za-z0-9_-])(?<keep>(?:-u|--user)[ \t]+["']?[^\s:"'\[\]]{1,64}:)(?<value>[^\s"'\[\]]{3,})/g,
    accept: (v) => !isPlaceholder(v),
  },
  {
    kind: 'bearer-token',
    pattern: /(?<![A-Za-z0-9_-])(?<keep>bearer[ \t]+)(?<value>[A-Za-z0-9._~+\/=-]{8,})/gi,
    accept: looksRandom,
  },
  {
    kind: 'authorization',
    pattern: new RegExp(
      '(?<![A-Za-z0-9_-])(?<keep>(?:(?:proxy-)?authorization|x-api-key|api-key|x-auth-token|x-goog-api-key)' +
        `["']?[ \\t]*[:=][ \\t]*["']?` +
        '(?:(?:bearer|basic|digest|token|bot|apikey|negotiate|aws4-hmac-sha256)[ \\t]+)?)' +
        `(?<value>[^\\s"',;\\[\\]<>]{4,})`,
      'gi',
    ),
    // A header value is a credential even when it does not look random (`Basic dXNlcjpwYXNz`).
    accept: (v) => !isPlaceholder(v) && (hasDigit(v) || (hasUpper(v) && hasLower(v)) || /[+\/=._~-]/.test(v)),
  },
  {
    kind: 'secret',
    pattern: new RegExp(
      `(?<![A-Za-z0-9])(?<keep>${SECRET_NAMES}${SECRET_ASSIGN})(?<value>${SECRET_VALUE})`,
      'gi',
    ),
    // Passwords need not look random, so any value that is not a placeholder goes.
    accept: (v) => !isPlaceholder(v),
  },
  {
    // camelCase names ending in one: `dbPassword`, `clientSecret`, `githubToken`, `openaiApiKey`. Case matters
    // here, so the rule is its own: the capital marks the word's start inside the name.
    kind: 'secret',
    pattern: new RegExp(
      `(?<=[a-z0-9])(?<keep>(?:Password|Passwd|Passphrase|Secret|SecretKey|SecretAccessKey|Token|AccessToken|AuthToken|ApiKey|PrivateKey)${SECRET_ASSIGN})(?<value>${SECRET_VALUE})`,
      'g',
    ),
    accept: (v) => !isPlaceholder(v),
  },
];

function applyRule(text: string, rule: Rule): string {
  return text.replace(rule.pattern, (...args: unknown[]) => {
    const match = args[0] as string;
    const last = args[args.length - 1];
    const groups =
      typeof last === 'object' && last !== null ? (last as Record<string, string | undefined>) : undefined;
    const value = groups?.['value'] ?? match;
    if (rule.accept !== undefined && !rule.accept(value)) return match;
    return `${groups?.['keep'] ?? ''}${marker(rule.kind)}`;
  });
}

const PEM_BEGIN = /-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----/g;
const PEM_END = /-----END [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----/y;
// Key material of a block whose END line is missing (cut off): base64, line breaks
// (also JSON-escaped `\n`) and the `Proc-Type:` / `DEK-Info:` header lines.
const PEM_BODY = /[A-Za-z0-9+\/=\s\\:,.-]*/y;

/** PEM private key blocks, from BEGIN to END (or through the key material when END is missing). */
function redactPrivateKeys(text: string): string {
  let out = '';
  let from = 0;
  let noEndAfter = Infinity; // once an END search fails, no later BEGIN has an END either
  PEM_BEGIN.lastIndex = 0;
  for (let begin = PEM_BEGIN.exec(text); begin !== null; begin = PEM_BEGIN.exec(text)) {
    const bodyStart = begin.index + begin[0].length;
    let stop = -1;
    if (bodyStart < noEndAfter) {
      let at = text.indexOf('-----END ', bodyStart);
      while (at !== -1) {
        PEM_END.lastIndex = at;
        if (PEM_END.test(text)) {
          stop = PEM_END.lastIndex;
          break;
        }
        at = text.indexOf('-----END ', at + 1);
      }
      if (stop === -1) noEndAfter = bodyStart;
    }
    if (stop === -1) {
      PEM_BODY.lastIndex = bodyStart;
      PEM_BODY.test(text);
      stop = PEM_BODY.lastIndex;
    }
    out += text.slice(from, begin.index) + marker('private-key');
    from = stop;
    PEM_BEGIN.lastIndex = stop;
  }
  return out + text.slice(from);
}

const AWS_ID_MARKER = marker('aws-access-key-id');
/** How far from an AWS key id a 40-character secret counts as "next to" it. */
const AWS_SECRET_REACH = 200;
const AWS_SECRET = /(?<![A-Za-z0-9\/+])[A-Za-z0-9\/+]{40}(?![A-Za-z0-9\/+=])/g;

/** A 40-character secret access key is indistinguishable from other base64 alone: only redact it next to a key id. */
function redactAwsSecretsNearKeyIds(text: string): string {
  const ranges: Array<[number, number]> = [];
  let scannedTo = 0;
  for (let id = text.indexOf(AWS_ID_MARKER); id !== -1; id = text.indexOf(AWS_ID_MARKER, id + 1)) {
    const start = Math.max(scannedTo, id - AWS_SECRET_REACH);
    const end = Math.min(text.length, id + AWS_ID_MARKER.length + AWS_SECRET_REACH);
    // Search a slice, not the whole text: a global search would run on to the end for every id.
    // One character either side keeps the boundary checks honest; a secret must start in the window.
    const sliceStart = Math.max(0, start - 1);
    const slice = text.slice(sliceStart, Math.min(text.length, end + 41));
    AWS_SECRET.lastIndex = start - sliceStart;
    for (let m = AWS_SECRET.exec(slice); m !== null && m.index + sliceStart < end; m = AWS_SECRET.exec(slice)) {
      const s = m[0];
      if (hasUpper(s) && hasLower(s) && (hasDigit(s) || /[+\/]/.test(s))) {
        ranges.push([sliceStart + m.index, sliceStart + m.index + s.length]);
      }
    }
    scannedTo = Math.max(scannedTo, end);
  }
  if (ranges.length === 0) return text;
  let out = '';
  let from = 0;
  for (const [s, e] of ranges) {
    if (s < from) continue;
    out += text.slice(from, s) + marker('aws-secret-access-key');
    from = e;
  }
  return out + text.slice(from);
}

const OWN_SECRET_MARKER = marker('reins-secret');

/**
 * Exact occurrences of Reins' own secret values (its configured provider keys, bootstrap admin secret, webhook
 * secrets, header values, database password) become `[REDACTED:reins-secret]`, whatever their format. One
 * indexOf scan of the text per secret (a handful), all found ranges merged, then one pass to build the result:
 * linear in the text for a fixed configuration.
 */
export function redactOwnSecrets(text: string, secrets: readonly string[]): string {
  const ranges: Array<[number, number]> = [];
  for (const secret of secrets) {
    if (secret.length < MIN_OWN_SECRET_LENGTH) continue;
    for (let at = text.indexOf(secret); at !== -1; at = text.indexOf(secret, at + secret.length)) ranges.push([at, at + secret.length]);
  }
  if (ranges.length === 0) return text;
  ranges.sort((a, b) => a[0] - b[0]);
  let out = '';
  let from = 0;
  for (const [start, end] of ranges) {
    if (end <= from) continue;
    if (start >= from) out += text.slice(from, start) + OWN_SECRET_MARKER;
    from = end;
  }
  return out + text.slice(from);
}

/**
 * Replace every credential found in `text` with a marker such as `[REDACTED:openai-key]`.
 * Formats: OpenAI, Anthropic, AWS key ids and the 40-character secret next to one, GitHub,
 * GitLab, Slack tokens and webhooks, Google, Hugging Face, npm, Stripe, JWTs, PEM private
 * keys, Bearer tokens, Authorization and API-key header values, URL passwords, and values
 * after `password=`, `secret=`, `api_key=`, `token=` and their kin (JSON, YAML, .env, shell forms), camelCase
 * names ending in one, `curl -u user:password`, SendGrid, PyPI, DigitalOcean and Shopify tokens. `ownSecrets`,
 * the values Reins itself is configured with, go first, found by their exact text.
 */
export function redactCredentials(text: string, ownSecrets: readonly string[] = []): string {
  let out = redactPrivateKeys(redactOwnSecrets(text, ownSecrets));
  for (const rule of RULES) {
    out = applyRule(out, rule);
    if (rule.kind === 'aws-access-key-id') out = redactAwsSecretsNearKeyIds(out);
  }
  return out;
}

const ELLIPSIS = '…';

/**
 * A short excerpt of a prompt for a held-call entry: redacted first, over the whole text,
 * then cut to at most `maxChars` characters (the ellipsis included). Redacting before
 * cutting is what keeps half a key from surviving: a cut key is too short to recognise.
 * The cut never splits a marker or a surrogate pair.
 */
export function promptExcerpt(text: string, maxChars: number, ownSecrets: readonly string[] = []): string {
  const redacted = redactCredentials(text, ownSecrets);
  const limit = Math.floor(maxChars);
  if (redacted.length <= limit) return redacted;
  if (!(limit >= 1)) return '';
  let cut = limit - ELLIPSIS.length;
  const open = cut > 0 ? redacted.lastIndexOf('[REDACTED:', cut - 1) : -1;
  if (open !== -1) {
    const close = redacted.indexOf(']', open);
    if (close === -1 || close + 1 > cut) cut = open;
  }
  const lastKept = redacted.charCodeAt(cut - 1);
  if (cut > 0 && lastKept >= 0xd800 && lastKept <= 0xdbff) cut -= 1;
  return redacted.slice(0, cut) + ELLIPSIS;
}
