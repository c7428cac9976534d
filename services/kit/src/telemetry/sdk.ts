import { OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-proto';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { ExpressInstrumentation } from '@opentelemetry/instrumentation-express';
import { GrpcInstrumentation } from '@opentelemetry/instrumentation-grpc';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { KafkaJsInstrumentation } from '@opentelemetry/instrumentation-kafkajs';
import { MongoDBInstrumentation } from '@opentelemetry/instrumentation-mongodb';
import { MongooseInstrumentation } from '@opentelemetry/instrumentation-mongoose';
import { PinoInstrumentation } from '@opentelemetry/instrumentation-pino';
import { PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { NodeSDK } from '@opentelemetry/sdk-node';

let sdk: NodeSDK | undefined;

export function telemetryEnabled(env = process.env): boolean {
  if (env.OTEL_SDK_DISABLED === 'true') return false;
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

export function startTelemetry(): void {
  if (sdk || !telemetryEnabled()) return;
  sdk = new NodeSDK({
    traceExporter: new OTLPTraceExporter(),
    metricReader: new PeriodicExportingMetricReader({ exporter: new OTLPMetricExporter() }),
    instrumentations: [
      // Probes and the docs page are noise in traces.
      new HttpInstrumentation({
        ignoreIncomingRequestHook: (req) => /^\/(healthz|readyz|docs)/.test(req.url ?? ''),
      }),
      new ExpressInstrumentation(),
      new GrpcInstrumentation(),
      new MongoDBInstrumentation({ enhancedDatabaseReporting: false }),
      new MongooseInstrumentation(),
      new KafkaJsInstrumentation(),
      new PinoInstrumentation(),
    ],
  });
  sdk.start();
}

/** Flushes spans on shutdown; a no-op when telemetry is off. */
export async function shutdownTelemetry(): Promise<void> {
  await sdk?.shutdown();
  sdk = undefined;
}
