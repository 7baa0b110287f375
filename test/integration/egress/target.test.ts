import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { parseConnectTarget, parseHttpTarget } from '../../../src/planes/egress/target.js';
import { proxySecret } from '../../../src/planes/egress/credential.js';

describe('egress targets: what decide sees is what Reins connects to', () => {
  const http: Array<[string, { host: string; port: number; path: string; authority: string }]> = [
    ['http://example.com/a?b=1', { host: 'example.com', port: 80, path: '/a?b=1', authority: 'example.com' }],
    ['http://Example.COM./', { host: 'example.com', port: 80, path: '/', authority: 'example.com' }],
    ['http://example.com', { host: 'example.com', port: 80, path: '/', authority: 'example.com' }],
    ['http://example.com?q', { host: 'example.com', port: 80, path: '/?q', authority: 'example.com' }],
    ['HTTP://example.com:8080/x#frag', { host: 'example.com', port: 8080, path: '/x', authority: 'example.com:8080' }],
    ['http://example.com:/x', { host: 'example.com', port: 80, path: '/x', authority: 'example.com' }],
    ['http://[::1]:8080/x', { host: '::1', port: 8080, path: '/x', authority: '[::1]:8080' }],
    ['http://[0:0::1]/', { host: '::1', port: 80, path: '/', authority: '[::1]' }],
    ['http://0x7f.1:81/', { host: '127.0.0.1', port: 81, path: '/', authority: '127.0.0.1:81' }],
    ['http://ex%61mple.com/', { host: 'example.com', port: 80, path: '/', authority: 'example.com' }],
    ['http://bücher.example/', { host: 'xn--bcher-kva.example', port: 80, path: '/', authority: 'xn--bcher-kva.example' }],
    // The path goes upstream as sent, not normalised.
    ['http://h/a/../b/%7e?x=%20', { host: 'h', port: 80, path: '/a/../b/%7e?x=%20', authority: 'h' }],
  ];
  for (const [raw, want] of http) {
    test(`absolute URI ${raw}`, () => {
      assert.deepEqual(parseHttpTarget(raw), { ok: true, target: want });
    });
  }

  const badHttp: Array<[string, RegExp]> = [
    ['/relative', /absolute URL/],
    ['https://example.com/', /CONNECT/],
    ['ftp://example.com/', /only http:\/\//],
    ['http://user:pw@example.com/', /user info/],
    ['http://example.com:99999/', /not a port/],
    ['http://example.com:0/', /not a port/],
    ['http://exa mple.com/', /not a valid host/],
    ['http:///path', /not a host/],
    ['http://[::1/', /not a host/],
    ['http://[zz::1]/', /not a valid host/],
    ['http://./', /not a valid host/],
    ['http://a\\b/', /not a valid host/],
  ];
  for (const [raw, message] of badHttp) {
    test(`absolute URI ${raw} is refused`, () => {
      const parsed = parseHttpTarget(raw);
      assert.equal(parsed.ok, false);
      if (!parsed.ok) assert.match(parsed.message, message);
    });
  }

  const connect: Array<[string, { host: string; port: number } | null]> = [
    ['example.com:443', { host: 'example.com', port: 443 }],
    ['BLOCKED.test.:443', { host: 'blocked.test', port: 443 }],
    ['[::1]:8443', { host: '::1', port: 8443 }],
    ['[2001:DB8::1]:443', { host: '2001:db8::1', port: 443 }],
    ['127.0.0.1:22', { host: '127.0.0.1', port: 22 }],
    ['example.com', null],
    ['example.com:', null],
    ['example.com:https', null],
    ['[::1]', null],
    ['::1:443', null],
    ['user@example.com:443', null],
    ['example.com:443/path', null],
    [':443', null],
    ['example.com:65535', { host: 'example.com', port: 65535 }],
    ['example.com:00443', { host: 'example.com', port: 443 }],
    ['example.com:1', { host: 'example.com', port: 1 }],
    ['example.com:0', null],
    ['example.com:65536', null],
    ['example.com:100000', null],
    ['example.com:44 3', null],
    ['example.com:+443', null],
    ['example.com:-1', null],
    ['example.com:4e2', null],
    ['example.com:\u0664\u0664\u0663', null],
  ];
  for (const [raw, want] of connect) {
    test(`CONNECT ${raw} ${want ? 'parses' : 'is refused'}`, () => {
      const parsed = parseConnectTarget(raw);
      if (want) assert.deepEqual(parsed, { ok: true, target: want });
      else assert.equal(parsed.ok, false);
    });
  }
});

describe('egress credential: the Reins token in Proxy-Authorization', () => {
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  const cases: Array<[string | undefined, string | null]> = [
    [`Basic ${b64('agent:tok-1')}`, 'tok-1'],
    [`basic ${b64('agent:tok:with:colons')}`, 'tok:with:colons'],
    [`Basic ${b64('tok-2:')}`, 'tok-2'],
    [`Bearer tok-3`, 'tok-3'],
    [`bearer   tok-4 `, 'tok-4'],
    [`Basic ${b64('no-colon')}`, null],
    [`Basic ${b64(':')}`, null],
    ['Digest abc', null],
    ['Bearer', null],
    ['', null],
    [undefined, null],
  ];
  for (const [header, want] of cases) {
    test(`${JSON.stringify(header)} -> ${JSON.stringify(want)}`, () => {
      assert.equal(proxySecret(header), want);
    });
  }

  // proxySecret splits the header by hand; this is the expression it replaced, which defines what it accepts.
  const byExpression = (header: string): string | null => {
    const match = /^\s*(\S+)\s+(\S+)\s*$/.exec(header);
    if (!match) return null;
    const scheme = match[1]!.toLowerCase();
    if (scheme === 'bearer') return match[2]!;
    if (scheme !== 'basic') return null;
    const decoded = Buffer.from(match[2]!, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) return null;
    const secret = decoded.slice(colon + 1) !== '' ? decoded.slice(colon + 1) : decoded.slice(0, colon);
    return secret === '' ? null : secret;
  };

  test('whitespace of every kind, anywhere: the same answer as the expression /^\\s*(\\S+)\\s+(\\S+)\\s*$/', () => {
    const spaces = [' ', '\t', '\n', '\v', '\f', '\r', '\u00a0', '\u1680', '\u2000', '\u200a', '\u2028', '\u2029', '\u202f', '\u205f', '\u3000', '\ufeff', '\u0085', '\u180e', '\u200b'];
    const words = ['Bearer', 'basic', 'BASIC', 'Digest', 'tok-1', b64('agent:tok-9'), b64('tok-8:'), b64(':'), '', 'a'];
    let seed = 7;
    const pick = <T,>(xs: readonly T[]): T => xs[(seed = (seed * 1103515245 + 12345) % 2147483648) % xs.length]!;
    let secrets = 0;
    for (let i = 0; i < 20_000; i++) {
      let header = '';
      const parts = 1 + (i % 5);
      for (let p = 0; p < parts; p++) header += (i + p) % 3 === 0 ? pick(spaces) + pick(spaces) : pick(i % 2 === 0 ? words : spaces) + pick(words);
      const got = proxySecret(header);
      assert.equal(got, byExpression(header), JSON.stringify(header));
      if (got !== null) secrets++;
    }
    // Both answers were exercised, not only refusals.
    assert.ok(secrets > 500 && secrets < 19_500, `${secrets} of 20000 headers carried a secret`);
  });
});
