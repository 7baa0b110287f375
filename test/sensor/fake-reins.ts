/** A stand-in for Reins' two sensor ingest routes (real HTTP), recording what the sensor sent. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeReins {
  url: string;
  port: number;
  reports: any[];
  statuses: any[];
  status: number;
  auth: string[];
  close(): Promise<void>;
}

export async function fakeReins(port = 0): Promise<FakeReins> {
  const state: FakeReins = { url: '', port: 0, reports: [], statuses: [], status: 200, auth: [], close: async () => {} };
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      state.auth.push(req.headers.authorization ?? '');
      if (state.status !== 200) {
        res.writeHead(state.status, { 'content-type': 'application/json' });
        return res.end('{"error":{"code":"x","message":"no"}}');
      }
      const parsed = JSON.parse(body);
      if (req.url === '/api/v1/runtime/sensor/reports') state.reports.push(parsed);
      else state.statuses.push(parsed);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(req.url === '/api/v1/runtime/sensor/reports' ? JSON.stringify({ stored: parsed.observations.length }) : '{"status":"ok"}');
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  state.port = (server.address() as AddressInfo).port;
  state.url = `http://127.0.0.1:${state.port}`;
  state.close = () => new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
  return state;
}

