/**
 * Whether this process sends telemetry, and its shutdown: light on purpose (no SDK import), so a
 * process with telemetry off never loads the OpenTelemetry SDK (about half a second of start-up,
 * paid again by every restart).
 */

let running: { shutdown(): Promise<void> } | undefined;

/**
 * Traces and metrics may go to different places (metrics straight to Prometheus's OTLP receiver,
 * say), or only one of them anywhere: each is on when an endpoint names it and its exporter is
 * not "none".
 */
export function sends(signal: 'TRACES' | 'METRICS', env = process.env): boolean {
  if (env.OTEL_SDK_DISABLED === 'true' || env[`OTEL_${signal}_EXPORTER`] === 'none') return false;
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env[`OTEL_EXPORTER_OTLP_${signal}_ENDPOINT`]);
}

/** Called by the SDK's start: what `shutdownTelemetry` flushes. */
export function telemetryStarted(sdk: { shutdown(): Promise<void> }): void {
  running = sdk;
}

/** Flushes spans and metrics on shutdown; a no-op when telemetry is off. */
export async function shutdownTelemetry(): Promise<void> {
  await running?.shutdown();
  running = undefined;
}
