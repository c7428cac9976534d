import pino, { type Logger } from 'pino';

export type { Logger };

/**
 * Structured JSON logs. With telemetry on, the pino instrumentation adds `trace_id` and
 * `span_id` to every line logged inside a span. Secrets are redacted by path as a last line of
 * defence; code should not log them in the first place.
 */
export function createLogger(service: string, level = 'info'): Logger {
  return pino({
    name: service,
    level,
    base: { service },
    redact: {
      paths: [
        'req.headers.authorization',
        'req.headers["x-api-key"]',
        'headers.authorization',
        'key',
        'secret',
        '*.secret',
        '*.customApiSecret',
        '*.omniChannelSettings',
      ],
      censor: '[redacted]',
    },
    timestamp: pino.stdTimeFunctions.isoTime,
  });
}
