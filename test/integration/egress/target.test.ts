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
});
