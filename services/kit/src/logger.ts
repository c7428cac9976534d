import pino, { type Logger } from 'pino';

export type { Logger };

/** Paths every process redacts: credentials on HTTP and gRPC requests. */
const COMMON_REDACT = [
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'headers.authorization',
  'headers["x-api-key"]',
];

/**
 * Structured JSON logs. With telemetry on, the pino instrumentation adds `trace_id` and
 * `span_id` to every line logged inside a span. Each service names the paths of its own secrets
 * in `redact` (pino path syntax), as a last line of defence; code should not log them at all.
 */
export function createLogger(service: string, level = 'info', opts: { redact?: readonly string[] } = {}): Logger {
  return pino({
    name: service,
    level,
    base: { service },
    redact: { paths: [...COMMON_REDACT, ...(opts.redact ?? [])], censor: '[redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
  });
}
