import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { sensorMetricsPort, sensorMetricsTargets } from '../../../../src/runtime-guard/kube/sensor-discovery.js';

const sensor = (ports?: Array<{ name?: string; containerPort: number }>) => ({
  metadata: { labels: { 'app.kubernetes.io/name': 'reins-sensor' } },
  spec: { containers: [{ name: 'sensor', ...(ports ? { ports } : {}) }] },
});

describe('sensor discovery', () => {
  test('the container port named metrics, else 9090; null for a pod that is not a sensor', () => {
    assert.equal(sensorMetricsPort(sensor([{ name: 'grpc', containerPort: 50051 }, { name: 'metrics', containerPort: 2112 }])), 2112);
    assert.equal(sensorMetricsPort(sensor([{ name: 'grpc', containerPort: 50051 }])), 9090);
    assert.equal(sensorMetricsPort(sensor()), 9090);
    assert.equal(sensorMetricsPort({ metadata: { labels: { 'app.kubernetes.io/name': 'other' } }, spec: {} }), null);
    assert.equal(sensorMetricsPort({}), null);
  });

  test('configured targets win, as configured', () => {
    const pods = [{ ip: '10.0.0.1', phase: 'Running', sensorPort: 9090 }];
    assert.deepEqual(sensorMetricsTargets(['http://sensor.example:9090/metrics'], pods), ['http://sensor.example:9090/metrics']);
  });

  test('otherwise running sensor pods with an IP, sorted, IPv6 in brackets', () => {
    const pods = [
      { ip: '10.0.0.2', phase: 'Running', sensorPort: 2112 },
      { ip: '10.0.0.1', phase: 'Running', sensorPort: 9090 },
      { ip: '10.0.0.3', phase: 'Pending', sensorPort: 9090 },
      { ip: '', phase: 'Running', sensorPort: 9090 },
      { ip: '10.0.0.4', phase: 'Running', sensorPort: null },
      { ip: 'fd00::5', phase: 'Running', sensorPort: 9090 },
    ];
    assert.deepEqual(sensorMetricsTargets([], pods), ['http://10.0.0.1:9090/metrics', 'http://10.0.0.2:2112/metrics', 'http://[fd00::5]:9090/metrics']);
  });
});
