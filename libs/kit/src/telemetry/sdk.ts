import { OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-proto';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { ExpressInstrumentation } from '@opentelemetry/instrumentation-express';
import { GrpcInstrumentation } from '@opentelemetry/instrumentation-grpc';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { KafkaJsInstrumentation } from '@opentelemetry/instrumentation-kafkajs';
import { MongoDBInstrumentation } from '@opentelemetry/instrumentation-mongodb';
import { MongooseInstrumentation } from '@opentelemetry/instrumentation-mongoose';
import { PinoInstrumentation } from '@opentelemetry/instrumentation-pino';
import { RuntimeNodeInstrumentation } from '@opentelemetry/instrumentation-runtime-node';
import {
  envDetector,
  hostDetector,
  osDetector,
  processDetector,
  serviceInstanceIdDetector,
} from '@opentelemetry/resources';
import { PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { sends, telemetryStarted } from './running';

let sdk: NodeSDK | undefined;

/** Starts the SDK with the instrumentations, once, when traces or metrics are sent anywhere. */
export function startTelemetry(): void {
  const traces = sends('TRACES');
  const metrics = sends('METRICS');
  if (sdk || !(traces || metrics)) return;
  sdk = new NodeSDK({
    // Empty lists, not absent ones: absent, the SDK would configure exporters from the environment.
    ...(traces ? { traceExporter: new OTLPTraceExporter() } : { spanProcessors: [] }),
    // A reader passed in ignores OTEL_METRIC_EXPORT_INTERVAL unless given it (default 60 s).
    metricReaders: metrics
      ? [
          new PeriodicExportingMetricReader({
            exporter: new OTLPMetricExporter(),
            exportIntervalMillis: Number(process.env.OTEL_METRIC_EXPORT_INTERVAL) || 60_000,
          }),
        ]
      : [],
    // The charts set the pod and namespace in OTEL_RESOURCE_ATTRIBUTES.
    resourceDetectors: [envDetector, hostDetector, osDetector, processDetector, serviceInstanceIdDetector],
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
      // Event-loop delay and utilisation, heap and GC: what tells a saturated process.
      new RuntimeNodeInstrumentation(),
    ],
  });
  sdk.start();
  telemetryStarted(sdk);
}
