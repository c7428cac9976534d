/**
 * Loaded with `node --require @voiceapi/kit/telemetry` before any other module, so the
 * auto-instrumentations can patch http, express, grpc, mongodb, mongoose, kafkajs and pino.
 * Everything is configured by the standard `OTEL_*` variables. With no exporter endpoint set
 * (or OTEL_SDK_DISABLED=true) the SDK is not started at all and costs nothing.
 */
import { startTelemetry } from './sdk';

startTelemetry();
