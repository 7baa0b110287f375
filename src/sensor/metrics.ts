/**
 * The sensor's counters in Prometheus text format, served on the port named `metrics` (deploy/README.md). Reins
 * scrapes `reins_sensor_observations_recorded_total{node}` and compares it with the items it stored for the node:
 * the difference is the ingest lag (docs/api.md, "Runtime sensor ingest"), so that counter counts observation items, one
 * per distinct item of a report window (not their `count`), including the ones the window had no room for.
 *
 * Plain numbers, written out on a scrape: the hot path (tens of thousands of events a second) only adds to a field.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DROP_CAUSES, GADGETS, type DropCause, type Gadget } from './adapter.js';

/** Why recorded observation items never reached Reins: each shows as lag there. */
export const LOSS_CAUSES = ['report-full', 'send-backlog', 'refused'] as const;
export type LossCause = (typeof LOSS_CAUSES)[number];

export class SensorMetrics {
  observationsRecorded = 0;
  readonly eventsRead = Object.fromEntries(GADGETS.map((g) => [g, 0])) as Record<Gadget, number>;
  readonly eventsDropped = Object.fromEntries(DROP_CAUSES.map((c) => [c, 0])) as Record<DropCause, number>;
  readonly observationsLost = Object.fromEntries(LOSS_CAUSES.map((c) => [c, 0])) as Record<LossCause, number>;
  reportsSent = 0;
  reportsFailed = 0;
  statusSent = 0;
  statusFailed = 0;
  readonly engineRestarts = Object.fromEntries(GADGETS.map((g) => [g, 0])) as Record<Gadget, number>;

  constructor(readonly node: string) {}

  text(): string {
    const node = escapeLabel(this.node);
    const out: string[] = [];
    const counter = (name: string, help: string, samples: Array<[string, number]>) => {
      out.push(`# HELP ${name} ${help}`, `# TYPE ${name} counter`);
      for (const [labels, value] of samples) out.push(`${name}${labels} ${value}`);
    };
    const by = <K extends string>(label: string, values: Record<K, number>): Array<[string, number]> =>
      Object.entries<number>(values).map(([k, v]) => [`{node="${node}",${label}="${escapeLabel(k)}"}`, v]);
    counter('reins_sensor_observations_recorded_total', 'Observation items recorded (distinct items per report window, not their count)', [[`{node="${node}"}`, this.observationsRecorded]]);
    counter('reins_sensor_events_read_total', 'Engine events read, by gadget', by('gadget', this.eventsRead));
    counter('reins_sensor_events_dropped_total', 'Engine events that yielded no observation, by cause', by('cause', this.eventsDropped));
    counter('reins_sensor_observations_lost_total', 'Recorded observation items that never reached Reins, by cause', by('cause', this.observationsLost));
    counter('reins_sensor_reports_sent_total', 'Reports Reins accepted', [[`{node="${node}"}`, this.reportsSent]]);
    counter('reins_sensor_reports_failed_total', 'Report sends that failed (each retry counts)', [[`{node="${node}"}`, this.reportsFailed]]);
    counter('reins_sensor_status_sent_total', 'Node statuses Reins accepted', [[`{node="${node}"}`, this.statusSent]]);
    counter('reins_sensor_status_failed_total', 'Node status sends that failed', [[`{node="${node}"}`, this.statusFailed]]);
    counter('reins_sensor_engine_restarts_total', 'Engine processes restarted after they ended, by gadget', by('gadget', this.engineRestarts));
    out.push('');
    return out.join('\n');
  }
}

function escapeLabel(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

/** `GET /metrics` (and `/healthz`) on the given port; 0 picks a free one. */
export async function serveMetrics(metrics: SensorMetrics, port: number, host = '0.0.0.0'): Promise<{ server: Server; port: number }> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method === 'GET' && path === '/metrics') {
      res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' });
      res.end(metrics.text());
    } else if (req.method === 'GET' && path === '/healthz') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('ok\n');
    } else {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('not found\n');
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return { server, port: (server.address() as AddressInfo).port };
}
