import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { coveringIpv4Cidr } from '../../../src/runtime-guard/addresses.js';
import { buildFactsIndex, classifyAddress, derivedServiceCidr } from '../../../src/runtime-guard/classify.js';
import { emptyClusterFacts } from '../../../src/runtime-guard/reconciliation.js';
import type { ClusterFacts } from '../../../src/runtime-guard/types.js';

describe('the Service range derived from ClusterIPs', () => {
  test('the narrowest prefix holding every address', () => {
    assert.equal(coveringIpv4Cidr(['10.96.0.1', '10.96.0.10', '10.96.7.7']), '10.96.0.0/21');
    assert.equal(coveringIpv4Cidr(['10.96.0.1']), '10.96.0.1/32');
    assert.equal(coveringIpv4Cidr(['10.96.0.1', '10.111.255.254']), '10.96.0.0/12');
  });

  test('wider than /12 (Services of two ranges): nothing; IPv6 and garbage ignored; none: nothing', () => {
    assert.equal(coveringIpv4Cidr(['10.96.0.1', '10.200.0.1']), null);
    assert.equal(coveringIpv4Cidr(['fd00::1', 'None', '10.96.0.1']), '10.96.0.1/32');
    assert.equal(coveringIpv4Cidr([]), null);
  });

  const facts = (over: Partial<ClusterFacts>): ClusterFacts => ({
    ...emptyClusterFacts(),
    complete: true,
    services: [
      { namespace: 'default', name: 'kubernetes', clusterIPs: ['10.96.0.1'] },
      { namespace: 'eng', name: 'vip', clusterIPs: ['10.96.5.5'] },
    ],
    endpointSlices: [{ namespace: 'eng', serviceName: 'vip', endpoints: [{ addresses: ['10.96.6.6'] }, { addresses: ['10.97.0.1'] }] }],
    ...over,
  });

  test('without serviceCIDRs the derived range decides which endpoint addresses are in-cluster', () => {
    assert.equal(derivedServiceCidr(facts({})), '10.96.0.0/21');
    const index = buildFactsIndex(facts({}));
    assert.deepEqual(index.serviceCidrs, ['10.96.0.0/21']);
    assert.equal(classifyAddress('10.96.6.6', index).cls?.suppressReason, 'in-cluster');
    assert.equal(classifyAddress('10.97.0.1', index).cls, undefined);
  });

  test('serviceCIDRs given: they are used, nothing is derived', () => {
    const index = buildFactsIndex(facts({ serviceCIDRs: ['10.96.0.0/12'] }));
    assert.deepEqual(index.serviceCidrs, ['10.96.0.0/12']);
    assert.equal(classifyAddress('10.97.0.1', index).cls?.suppressReason, 'in-cluster');
  });

  test('a cluster DNS address outside the ranges is not coredns; NodeLocal DNSCache is', () => {
    const index = buildFactsIndex(facts({ clusterDnsAddresses: ['10.96.0.10', '162.159.140.245', '169.254.20.10'] }));
    assert.equal(classifyAddress('10.96.0.10', index).cls?.suppressReason, 'coredns');
    assert.equal(classifyAddress('162.159.140.245', index).cls, undefined);
    assert.equal(classifyAddress('169.254.20.10', index).cls?.suppressReason, 'coredns');
  });
});
