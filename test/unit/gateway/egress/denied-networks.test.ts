import assert from 'node:assert/strict';
import type { LookupAddress } from 'node:dns';
import { describe, test } from 'node:test';
import { DEFAULT_DENIED_NETWORKS, DeniedAddressError, DeniedNetworks, parseNetwork } from '../../../../src/gateway/egress/denied-networks.js';

describe('egress denied networks', () => {
  const defaults = new DeniedNetworks(DEFAULT_DENIED_NETWORKS);

  test('the default list covers every cloud metadata address and link-local, and nothing public or private', () => {
    for (const address of ['169.254.169.254', '169.254.170.2', 'fd00:ec2::254', '100.100.100.200', 'fe80::1', '::ffff:169.254.169.254', '::ffff:a9fe:a9fe']) {
      assert.notEqual(defaults.networkOf(address), null, address);
    }
    for (const address of ['8.8.8.8', '127.0.0.1', '10.1.2.3', '192.168.0.1', '::1', '2606:4700::1111', '100.100.100.201']) {
      assert.equal(defaults.networkOf(address), null, address);
    }
    assert.equal(defaults.networkOf('not-an-address'), null);
  });

  test('names the configured network an address falls in', () => {
    const guard = new DeniedNetworks(['10.0.0.0/8', 'fd00::/8', '192.0.2.7']);
    assert.equal(guard.networkOf('10.200.0.1'), '10.0.0.0/8');
    assert.equal(guard.networkOf('fd12::3'), 'fd00::/8');
    assert.equal(guard.networkOf('192.0.2.7'), '192.0.2.7');
    assert.equal(guard.networkOf('192.0.2.8'), null);
    assert.equal(new DeniedNetworks([]).empty, true);
  });

  test('refuses an address literal, never a name (names are checked when they resolve)', () => {
    const err = defaults.refuseLiteral('169.254.169.254');
    assert.ok(err instanceof DeniedAddressError);
    assert.equal(err.network, '169.254.0.0/16');
    assert.match(err.message, /169\.254\.169\.254 is in 169\.254\.0\.0\/16, a network agents may not reach \(egress\.deniedNetworks\)/);
    assert.equal(defaults.refuseLiteral('metadata.google.internal'), null);
    assert.equal(defaults.refuseLiteral('93.184.216.34'), null);
  });

  test('parseNetwork says what is wrong with an entry', () => {
    assert.deepEqual(parseNetwork('10.0.0.0/8'), { network: '10.0.0.0', prefix: 8, family: 'ipv4' });
    assert.deepEqual(parseNetwork('::1'), { network: '::1', prefix: 128, family: 'ipv6' });
    assert.match((parseNetwork('intranet') as { error: string }).error, /not an IP network/);
    assert.match((parseNetwork('10.0.0.0/33') as { error: string }).error, /from 0 to 32/);
    assert.match((parseNetwork('fd00::/129') as { error: string }).error, /from 0 to 128/);
    assert.match((parseNetwork('10.0.0.0/x') as { error: string }).error, /prefix length/);
  });

  test('the guarded lookup refuses a name when any address it resolves to is denied, in both lookup forms', async () => {
    const guard = new DeniedNetworks(['127.0.0.0/8', '::1/128']);
    const all = await new Promise<{ err: Error | null; addresses: unknown }>((resolve) =>
      guard.lookup('localhost', { all: true }, (err, addresses) => resolve({ err, addresses })),
    );
    assert.ok(all.err instanceof DeniedAddressError, 'localhost resolves into 127.0.0.0/8 or ::1');
    assert.equal((all.err as DeniedAddressError).host, 'localhost');
    assert.match(all.err.message, /localhost resolves to (127\.0\.0\.1|::1), in (127\.0\.0\.0\/8|::1\/128)/);
    const one = await new Promise<Error | null>((resolve) => guard.lookup('localhost', {}, (err) => resolve(err)));
    assert.ok(one instanceof DeniedAddressError);

    const open = new DeniedNetworks(['10.0.0.0/8']);
    const passed = await new Promise<{ err: Error | null; addresses: unknown }>((resolve) =>
      open.lookup('localhost', { all: true }, (err, addresses) => resolve({ err, addresses })),
    );
    assert.equal(passed.err, null);
    assert.ok((passed.addresses as LookupAddress[]).length > 0);
  });
});
