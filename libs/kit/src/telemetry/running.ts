// No SDK import: a process with telemetry off never loads the SDK (~0.5 s of every start-up).

let running: { shutdown(): Promise<void> } | undefined;

/** Each signal is sent when an endpoint names it and its exporter is not "none". */
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
