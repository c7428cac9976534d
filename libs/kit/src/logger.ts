import pino, { type Logger } from 'pino';

export type { Logger };

/** Paths every process redacts: credentials on HTTP and gRPC requests. */
const COMMON_REDACT = [
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'headers.authorization',
  'headers["x-api-key"]',
];

/** JSON logs; `redact` names a service's own secret paths, a last defence (code should not log them). */
export function createLogger(service: string, level = 'info', opts: { redact?: readonly string[] } = {}): Logger {
  return pino({
    name: service,
    level,
    base: { service },
    redact: { paths: [...COMMON_REDACT, ...(opts.redact ?? [])], censor: '[redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
  });
}
