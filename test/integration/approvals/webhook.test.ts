/**
 * The outgoing notification webhook: HMAC-signed JSON, retried after a failure, each notification acknowledged
 * once, and nothing sent without a configured webhook.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Replica } from '../../../src/app/server.js';
import { ADMIN_TOKEN, Client, describeEachStore, developerWithToken, startTestReplica, WAIT_MS, waitFor } from '../../helpers/harness.js';

const SECRET = 'webhook-secret-0123456789abcdef';

describeEachStore('notification webhook', ({ store }) => {
  let receiver: Server;
  const received: { id: string; body: any; valid: boolean; answered: number }[] = [];
  const failedOnce = new Set<string>();
  let replica: Replica;
  before(async () => {
    receiver = createServer((req, res) => {
      let raw = '';
      req.on('data', (c: Buffer) => (raw += c.toString('utf8')));
      req.on('end', () => {
        const ts = String(req.headers['x-reins-timestamp']);
        const expected = `sha256=${createHmac('sha256', SECRET).update(`${ts}.${raw}`).digest('hex')}`;
        const id = String(req.headers['x-reins-notification-id']);
        // The first attempt of every notification fails: the dispatcher must retry it.
        const status = failedOnce.has(id) ? 200 : 500;
        failedOnce.add(id);
        received.push({ id, body: JSON.parse(raw), valid: req.headers['x-reins-signature'] === expected, answered: status });
        res.writeHead(status).end();
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    replica = await startTestReplica(store(), { approvals: { expirySweepSeconds: 15, webhook: { url, secret: SECRET, intervalSeconds: 0.1, maxAttempts: 5 } } });
  });
  after(async () => {
    await replica.close();
    receiver.closeAllConnections();
    await new Promise<void>((r) => receiver.close(() => r()));
  });

  test('a decision\'s notifications are posted signed, retried after a failure, and acknowledged once each', async () => {
    const admin = new Client(replica.url, ADMIN_TOKEN);
    const dev = admin.with(await developerWithToken(admin, 'eng/hooked', 'developer'));
    const req = (await dev.post('/api/v1/access-requests', { type: 'model_access', requestedModel: 'o3', justification: 'eval <b>x</b>' })).body;
    await admin.post(`/api/v1/access-requests/${req.id}/approve`, {});
    const ok = () => received.filter((r) => r.answered === 200);
    assert.ok((await waitFor(() => ok().some((r) => r.body.kind === 'request_approved'), WAIT_MS)) >= 0, JSON.stringify(received));
    const approved = ok().find((r) => r.body.kind === 'request_approved')!;
    assert.equal(approved.valid, true);
    assert.equal(approved.body.recipient, 'eng/hooked');
    assert.equal(approved.body.requestId, req.id);
    assert.ok(received.filter((r) => r.id === approved.id).length >= 2, 'retried after the first failure');
    await new Promise((r) => setTimeout(r, 500));
    const acknowledged = ok().map((r) => r.id);
    assert.equal(new Set(acknowledged).size, acknowledged.length, 'each notification acknowledged once');
  });
});
