/**
 * `node --require @voiceapi/kit/telemetry`, before any other module, so the instrumentations can patch.
 * Configured by `OTEL_*`; with no exporter endpoint the SDK is not even loaded.
 */
import { enableCompileCache } from 'node:module';
import { sends } from './running';

// Start-up is mostly compiling; a restart finds the cache in the temp directory (docs/decisions/0142).
enableCompileCache();

if (sends('TRACES') || sends('METRICS')) {
  // Synchronously: the instrumentations must patch before the process loads what they patch.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  (require('./sdk') as typeof import('./sdk')).startTelemetry();
}
