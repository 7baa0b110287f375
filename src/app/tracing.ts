/**
 * OpenTelemetry span export, when configured (config.ts tracingFromEnv): a tracer provider of the SDK with a batch
 * processor and the OTLP/HTTP exporter (JSON), its resource naming the service. The governance makes one span per
 * governed call with it (governance/call-telemetry.ts). Nothing is created when no endpoint is configured.
 */
import type { Tracer } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { TracingConfig } from '../config/config.js';
import { REINS_VERSION } from '../version.js';

export interface Tracing {
  tracer: Tracer;
  /** Sends the spans still queued, then stops. */
  shutdown(): Promise<void>;
}

export function startTracing(config: TracingConfig | null | undefined): Tracing | null {
  if (!config) return null;
  const exporter = new OTLPTraceExporter({ url: config.tracesEndpoint });
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': config.serviceName, 'service.version': REINS_VERSION }),
    spanProcessors: [new BatchSpanProcessor(exporter, { scheduledDelayMillis: config.scheduleDelayMs })],
  });
  return {
    tracer: provider.getTracer('reins', REINS_VERSION),
    // A collector that is down must not hold a replica's shutdown: the SDK's export timeout bounds it.
    shutdown: () => provider.shutdown().catch(() => undefined),
  };
}
