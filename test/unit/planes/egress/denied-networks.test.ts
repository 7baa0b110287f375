import assert from 'node:assert/strict';
import type { LookupAddress } from 'node:dns';
import { networkInterfaces } from 'node:os';
import { describe, test } from 'node:test';
import {
  AddressGuard,
  DeniedAddressError,
  DeniedNetworks,
  OWN_PORT_NETWORK,
  isOwnAddress,
  isUnspecified,
} from '../../../../src/planes/egress/denied-networks.js';
import { DEFAULT_DENIED_NETWORKS, parseNetwork } from '../../../../src/shared/networks.js';
import { parseConnectTarget } from '../../../../src/planes/egress/target.js';

/** The host the proxy checks for a CONNECT authority: every spelling goes through the URL host parser first. */
function hostOf(authority: string): string {
  const parsed = parseConnectTarget(`${authority}:80`);
  assert.ok(parsed.ok, authority);
  return parsed.target.host;
}

function lookup(fn: NonNullable<ReturnType<AddressGuard['lookupFor']>>, name: string): Promise<{ err: Error | null; addresses: unknown }> {
  return new Promise((resolve) => fn(name, { all: true }, (err, addresses) => resolve({ err, addresses })));
}

describe('egress denied networks', () => {
  const defaults = new DeniedNetworks(DEFAULT_DENIED_NETWORKS);

  // [address as the agent may spell it, the network of the default list it falls in; null: reachable]
  const table: [string, string | null][] = [
    ['127.0.0.1', '127.0.0.0/8'],
    ['127.1', '127.0.0.0/8'],
    ['0x7f000001', '127.0.0.0/8'],
    ['2130706433', '127.0.0.0/8'],
    ['017700000001', '127.0.0.0/8'],
    ['0x7f.1', '127.0.0.0/8'],
    ['127.255.255.254', '127.0.0.0/8'],
    ['[::1]', '::1/128'],
    ['[0:0:0:0:0:0:0:1]', '::1/128'],
    ['[::ffff:127.0.0.1]', '127.0.0.0/8'],
    ['[0:0:0:0:0:ffff:7f00:1]', '127.0.0.0/8'],
    ['0', '0.0.0.0/8'],
    ['0.0.0.0', '0.0.0.0/8'],
    ['[::]', '::/128'],
    ['[::ffff:0.0.0.0]', '0.0.0.0/8'],
    ['169.254.169.254', '169.254.0.0/16'],
    ['[::ffff:169.254.169.254]', '169.254.0.0/16'],
    ['[fe80::1]', 'fe80::/10'],
    ['10.1.2.3', '10.0.0.0/8'],
    ['012.1.2.3', '10.0.0.0/8'],
    ['172.16.0.1', '172.16.0.0/12'],
    ['172.31.255.255', '172.16.0.0/12'],
    ['192.168.1.1', '192.168.0.0/16'],
    ['100.64.0.1', '100.64.0.0/10'],
    ['100.100.100.200', '100.64.0.0/10'],
    ['[fd00:ec2::254]', 'fc00::/7'],
    ['[fc00::1]', 'fc00::/7'],
    ['8.8.8.8', null],
    ['172.32.0.1', null],
    ['100.128.0.1', null],
    ['192.169.0.1', null],
    ['[2606:4700::1111]', null],
    ['[::ffff:8.8.8.8]', null],
  ];

  test('the default list: loopback, unspecified, link-local and private ranges in every spelling, nothing public', () => {
    for (const [spelling, network] of table) {
      const host = hostOf(spelling);
      assert.equal(defaults.networkOf(host), network, `${spelling} (${host})`);
      const refusal = defaults.refuseLiteral(host);
      assert.equal(refusal?.network ?? null, network, spelling);
    }
    assert.equal(defaults.networkOf('not-an-address'), null);
    assert.equal(defaults.refuseLiteral('metadata.google.internal'), null, 'names are checked when they resolve');
  });

  test('an unspecified address is denied wherever loopback is: a list naming only loopback closes 0.0.0.0, :: and ::ffff:0.0.0.0', () => {
    for (const list of [['127.0.0.0/8'], ['::1/128']]) {
      const guard = new DeniedNetworks(list);
      for (const spelling of ['0', '0.0.0.0', '0.1.2.3', '[::]', '[::ffff:0.0.0.0]']) {
        assert.equal(guard.networkOf(hostOf(spelling)), list[0], `${spelling} with ${list[0]} denied`);
      }
    }
    const metadataOnly = new DeniedNetworks(['169.254.0.0/16']);
    assert.equal(metadataOnly.networkOf('0.0.0.0'), null, 'a list allowing loopback allows the unspecified address too');
    assert.equal(metadataOnly.networkOf('fe80::1%eth0'), null);
    assert.equal(new DeniedNetworks(['fe80::/10']).networkOf('fe80::1%eth0'), 'fe80::/10', 'a zone does not hide a link-local address');
    for (const a of ['0.0.0.0', '0.255.0.1', '::', '::ffff:0:0']) assert.equal(isUnspecified(a), true, a);
    for (const a of ['127.0.0.1', '::1', '1.0.0.0', 'name']) assert.equal(isUnspecified(a), false, a);
  });

  test('names the configured network an address falls in', () => {
    const guard = new DeniedNetworks(['10.0.0.0/8', 'fd00::/8', '192.0.2.7']);
    assert.equal(guard.networkOf('10.200.0.1'), '10.0.0.0/8');
    assert.equal(guard.networkOf('fd12::3'), 'fd00::/8');
    assert.equal(guard.networkOf('192.0.2.7'), '192.0.2.7');
    assert.equal(guard.networkOf('192.0.2.8'), null);
    assert.equal(guard.networkOf('127.0.0.1'), null, 'a configured list replaces the default');
    assert.equal(new DeniedNetworks([]).empty, true);
    const err = defaults.refuseLiteral('169.254.169.254');
    assert.ok(err instanceof DeniedAddressError);
    assert.match(err.message, /169\.254\.169\.254 is in 169\.254\.0\.0\/16, a network agents may not reach \(egress\.deniedNetworks\)/);
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

describe("egress: Reins' own ports, whatever the list", () => {
  const interfaceAddresses = Object.values(networkInterfaces())
    .flatMap((entries) => entries ?? [])
    .map((e) => e.address);

  test("this host's addresses: loopback, unspecified and every interface address, in every spelling", () => {
    for (const spelling of ['127.0.0.1', '127.1', '0x7f000001', '2130706433', '127.9.9.9', '0', '[::]', '[::1]', '[::ffff:127.0.0.1]', '[::ffff:0.0.0.0]']) {
      assert.equal(isOwnAddress(hostOf(spelling)), true, spelling);
    }
    for (const address of interfaceAddresses) assert.equal(isOwnAddress(address), true, address);
    assert.equal(isOwnAddress('192.0.2.123'), interfaceAddresses.includes('192.0.2.123'));
    assert.equal(isOwnAddress('8.8.8.8'), false);
    assert.equal(isOwnAddress('localhost'), false, 'names are checked on what they resolve to');
  });

  test('an own port on an own address is refused even with deniedNetworks [], other ports and addresses pass', () => {
    const guard = new AddressGuard(null, new Set([8080, 8081]));
    for (const spelling of ['127.0.0.1', '0', '0.0.0.0', '127.1', '2130706433', '[::]', '[::1]', '[::ffff:127.0.0.1]', '[::ffff:0.0.0.0]', ...interfaceAddresses.map((a) => (a.includes(':') ? `[${a.split('%')[0]}]` : a))]) {
      for (const port of [8080, 8081]) {
        const refusal = guard.refuseLiteral(hostOf(spelling), port);
        assert.ok(refusal instanceof DeniedAddressError, `${spelling}:${port}`);
        assert.equal(refusal.network, OWN_PORT_NETWORK);
        assert.match(refusal.message, /is Reins itself; agents may not reach Reins through its egress proxy/);
      }
      assert.equal(guard.refuseLiteral(hostOf(spelling), 5432), null, `${spelling}:5432 with no list`);
    }
    assert.equal(guard.refuseLiteral('8.8.8.8', 8080), null);
    assert.equal(guard.lookupFor(5432), undefined, 'nothing to check: Node’s own lookup');
  });

  test('a name resolving to this host is refused on an own port; the denied networks still apply on others', async () => {
    const denied = new DeniedNetworks(['169.254.0.0/16']);
    const guard = new AddressGuard(denied, new Set([8080]));
    const own = await lookup(guard.lookupFor(8080)!, 'localhost');
    assert.ok(own.err instanceof DeniedAddressError);
    assert.equal((own.err as DeniedAddressError).network, OWN_PORT_NETWORK);
    assert.match(own.err.message, /localhost resolves to (127\.0\.0\.1|::1), and .* is Reins itself/);
    assert.equal(guard.lookupFor(5432), denied.lookup, 'another port: the shared lookup of the list');
    const other = await lookup(guard.lookupFor(5432)!, 'localhost');
    assert.equal(other.err, null);
  });
});
