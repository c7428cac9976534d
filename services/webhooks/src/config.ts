import {
  commaList,
  commonEnv,
  grpcServerEnv,
  loadConfig,
  masterSecret,
  parsedSetting,
  previousMasterSecrets,
} from '@voiceapi/kit';
import { z } from 'zod';
import { parseDuration, parseSchedule } from './domain/retry';

const duration = (fallback: string) => parsedSetting(fallback, parseDuration);

export const configSchema = z.object({
  ...commonEnv,
  ...grpcServerEnv,
  GRPC_HOST: z.string().default('127.0.0.1'),
  GRPC_PORT: z.coerce.number().int().min(0).max(65535).default(50067),
  MONGO_DB: z.string().default('webhooks'),
  /** Seals endpoint signing secrets at rest (AES-256-GCM). Never leaves this service. */
  WEBHOOK_SECRETS_KEY: masterSecret,
  /** Earlier keys, kept during a WEBHOOK_SECRETS_KEY rotation to open what they sealed (docs/operations.md). */
  WEBHOOK_SECRETS_PREVIOUS_KEYS: previousMasterSecrets,
  /** `host:port` entries deliveries may reach although private or loopback, over http too. */
  OUTBOUND_ALLOWLIST: commaList,
  /** An HTTP CONNECT proxy (`http://host:port`, e.g. Smokescreen) every delivery goes through; empty: direct. */
  OUTBOUND_PROXY: z.string().trim().default(''),
  /** Delay before the first attempt, then each retry; after the last, the delivery has failed. */
  WEBHOOK_RETRY_SCHEDULE: parsedSetting('0,5s,5m,30m,2h,5h,10h,10h', parseSchedule),
  /** One attempt, connection to last byte read. */
  WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(15_000),
  /** An endpoint with no success for this long is disabled. */
  WEBHOOK_DISABLE_AFTER: duration('5d'),
  WEBHOOK_ROTATION_OVERLAP: duration('24h'),
  /** 16 per endpoint lets a fast one take 500+/s; 1,024 in all leaves slots after 64 dead endpoints. */
  WEBHOOK_ENDPOINT_CONCURRENCY: z.coerce.number().int().min(1).max(100).default(16),
  WEBHOOK_MAX_IN_FLIGHT: z.coerce.number().int().min(1).max(10_000).default(1024),
  /** Finds other replicas' due deliveries; an idle look is one read, so 2 s costs half a store operation a second. */
  WEBHOOK_SWEEP_INTERVAL_MS: z.coerce.number().int().min(50).default(2_000),
  /** A fan-out's wait for a first attempt: done by then, the delivery is stored once with its outcome. */
  WEBHOOK_FIRST_WAIT_MS: z.coerce.number().int().min(10).max(60_000).default(2_000),
  /** Endpoint list cache: another replica's change is seen within it (no change stream). */
  WEBHOOK_ENDPOINT_CACHE_TTL_MS: z.coerce.number().int().min(100).default(1_000),
  /** Events of one fetched batch fanned out at once, the same tenant's too: deliveries carry no order. */
  WEBHOOK_FANOUT_CONCURRENCY: z.coerce.number().int().min(1).max(256).default(128),
});

export type Config = z.infer<typeof configSchema>;
export const readConfig = (env?: Record<string, string | undefined>): Readonly<Config> => loadConfig(configSchema, env);
