import { commonEnv, grpcServerEnv, loadConfig, masterSecret, previousMasterSecrets } from '@voiceapi/kit';
import { z } from 'zod';
import { parseDuration, parseSchedule } from './domain/retry';

/** A text setting read by `parse`, whose error message becomes the setting's error. */
const parsedText = <T>(fallback: string, parse: (text: string) => T) =>
  z
    .string()
    .default(fallback)
    .transform((v, ctx) => {
      try {
        return parse(v);
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: (err as Error).message });
        return z.NEVER;
      }
    });
const duration = (fallback: string) => parsedText(fallback, parseDuration);

export const configSchema = z.object({
  ...commonEnv,
  ...grpcServerEnv,
  GRPC_HOST: z.string().default('127.0.0.1'),
  GRPC_PORT: z.coerce.number().int().min(0).max(65535).default(50067),
  MONGO_DB: z.string().default('webhooks'),
  /** Seals endpoint signing secrets at rest (AES-256-GCM, key derived per purpose). Never leaves this service. */
  WEBHOOK_SECRETS_KEY: masterSecret,
  /** While WEBHOOK_SECRETS_KEY is rotated: the earlier keys, which still open what they sealed (docs/operations.md). */
  WEBHOOK_SECRETS_PREVIOUS_KEYS: previousMasterSecrets,
  /** `host:port` entries deliveries may reach although private or loopback, over http too. */
  OUTBOUND_ALLOWLIST: z
    .string()
    .default('')
    .transform((v) =>
      v
        .split(',')
        .map((e) => e.trim())
        .filter(Boolean),
    ),
  /** Delay before each attempt: the first, then each retry. After the last, the delivery has failed. */
  WEBHOOK_RETRY_SCHEDULE: parsedText('0,5s,5m,30m,2h,5h,10h,10h', parseSchedule),
  /** One attempt, connection to last byte read. */
  WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(15_000),
  /** An endpoint with no success for this long is disabled. */
  WEBHOOK_DISABLE_AFTER: duration('5d'),
  /** How long a rotated-out secret keeps signing beside the new one. */
  WEBHOOK_ROTATION_OVERLAP: duration('24h'),
  /**
   * Attempts in flight to one endpoint, and in all: 16 lets one fast endpoint take 500+ deliveries
   * a second; 1,024 in all means 64 dead endpoints (15 s timeouts) still leave slots for the rest.
   */
  WEBHOOK_ENDPOINT_CONCURRENCY: z.coerce.number().int().min(1).max(100).default(16),
  WEBHOOK_MAX_IN_FLIGHT: z.coerce.number().int().min(1).max(10_000).default(1024),
  /**
   * How often every replica looks for pending deliveries come due (another replica's retries,
   * what a dead or stopping replica held); its own retries wake it at their time. A look with
   * nothing due is one read: 2 s keeps an idle replica at half a store operation a second.
   */
  WEBHOOK_SWEEP_INTERVAL_MS: z.coerce.number().int().min(50).default(2_000),
  /**
   * How long an event's fan-out waits for a first attempt: done by then, the delivery is stored
   * once with its outcome; else it is stored pending and its outcome changes it later.
   */
  WEBHOOK_FIRST_WAIT_MS: z.coerce.number().int().min(10).max(60_000).default(2_000),
  /**
   * How long a tenant's endpoint list (read on every event's fan-out) is kept: another replica's
   * change to an endpoint is seen within it (this replica's own at once). No change stream.
   */
  WEBHOOK_ENDPOINT_CACHE_TTL_MS: z.coerce.number().int().min(100).default(1_000),
  /**
   * Fan-out: events of one fetched batch handled at once (deliveries carry no order, so the same
   * tenant's too). Each waits for its first attempts (at most WEBHOOK_FIRST_WAIT_MS).
   */
  WEBHOOK_FANOUT_CONCURRENCY: z.coerce.number().int().min(1).max(256).default(128),
});

export type Config = z.infer<typeof configSchema>;
export const readConfig = (env?: Record<string, string | undefined>): Readonly<Config> => loadConfig(configSchema, env);
