/**
 * Loaded with `node --require @voiceapi/kit/telemetry` before any other module, so the
 * auto-instrumentations can patch http, express, grpc, mongodb, mongoose, kafkajs and pino.
 * Everything is configured by the standard `OTEL_*` variables. With no exporter endpoint set
 * (or OTEL_SDK_DISABLED=true) the SDK is not even loaded and costs nothing.
 */
import { enableCompileCache } from 'node:module';
import { sends } from './running';

// Start-up is mostly compiling modules; the compiled code is kept in the temp directory
// (node-compile-cache), which a restarted container of the same pod and a restart of a local
// process find again: leads listened 1.3 → 0.9 s after a SIGKILL (docs/decisions/0142).
enableCompileCache();

if (sends('TRACES') || sends('METRICS')) {
  // Loaded only when used, synchronously: the instrumentations must patch before the process loads what they patch.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  (require('./sdk') as typeof import('./sdk')).startTelemetry();
}
