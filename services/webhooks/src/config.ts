import {
  commaList,
  commonEnv,
  loadConfig,
  masterSecret,
  parsedSetting,
  ownDatabase,
  previousMasterSecrets,
} from '@voiceapi/kit/config';
import { grpcServiceEnv } from '@voiceapi/kit/grpc';
import { grpcCallees } from '@voiceapi/proto';
import { z } from 'zod';
import { parseDuration, parseSchedule } from './domain/retry';

const duration = (fallback: string) => parsedSetting(fallback, parseDuration);

export const configSchema = z.object({
  ...commonEnv,
  ...grpcServiceEnv(grpcCallees.webhooks),
  ...ownDatabase('webhooks'),
  /** AES-256-GCM; it never leaves this service. */
  WEBHOOK_SECRETS_KEY: masterSecret.describe(
    'seals endpoint signing secrets (at least 32 characters, the same on every replica); `make run` makes one and ' +
      'keeps it in `.data/`',
  ),
  WEBHOOK_SECRETS_PREVIOUS_KEYS: previousMasterSecrets.describe(
    'while the key is rotated, the earlier keys, comma-separated: they still open (docs/operations.md)',
  ),
  OUTBOUND_ALLOWLIST: commaList.describe(
    'comma-separated `host:port` entries deliveries may reach although private or loopback, over plain `http:` too',
  ),
  OUTBOUND_PROXY: z
    .string()
    .trim()
    .default('')
    .describe(
      'an HTTP CONNECT egress proxy, `http://host:port` (e.g. Smokescreen), every delivery goes through, tunnelled, ' +
        'after the same checks; the proxy failing or refusing is ours (`platform`), its 502, 503 or 504 the ' +
        "endpoint's (decision 0157); empty: direct",
    ),
  WEBHOOK_RETRY_SCHEDULE: parsedSetting('0,5s,5m,30m,2h,5h,10h,10h', parseSchedule).describe(
    'the delay before the first attempt, then before each retry; after the last, the delivery has failed',
  ),
  WEBHOOK_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(100)
    .max(60_000)
    .default(15_000)
    .describe('one attempt, from connecting to the last byte read'),
  WEBHOOK_DISABLE_AFTER: duration('5d').describe('an endpoint with no success for this long is disabled'),
  WEBHOOK_ROTATION_OVERLAP: duration('24h').describe(
    "after a secret's rotation, the previous secret signs beside the new one for this long",
  ),
  /** 16 per endpoint lets a fast one take 500+/s; 1,024 in all leaves slots after 64 dead endpoints. */
  WEBHOOK_ENDPOINT_CONCURRENCY: z.coerce
    .number()
    .int()
    .min(1)
    .max(100)
    .default(16)
    .describe('deliveries in flight at once to one endpoint, per replica'),
  WEBHOOK_MAX_IN_FLIGHT: z.coerce
    .number()
    .int()
    .min(1)
    .max(10_000)
    .default(1024)
    .describe('deliveries in flight at once per replica, all endpoints together'),
  /** An idle look is one read: every 2 s costs half a store operation a second. */
  WEBHOOK_SWEEP_INTERVAL_MS: z.coerce
    .number()
    .int()
    .min(50)
    .default(2_000)
    .describe(
      "how often every replica looks for pending deliveries come due (another replica's retries, what a dead or " +
        'stopping replica held); its own retries wake it at their time',
    ),
  /** Done by then, the delivery is stored once, with its outcome. */
  WEBHOOK_FIRST_WAIT_MS: z.coerce
    .number()
    .int()
    .min(10)
    .max(60_000)
    .default(2_000)
    .describe('how long a fan-out waits for a first attempt before storing the delivery pending'),
  /** No change stream tells of a change. */
  WEBHOOK_ENDPOINT_CACHE_TTL_MS: z.coerce
    .number()
    .int()
    .min(100)
    .default(1_000)
    .describe(
      "a tenant's endpoints are cached for the fan-out this long: another replica's change is seen within it, " +
        "this replica's own at once",
    ),
  /** Deliveries carry no order. */
  WEBHOOK_FANOUT_CONCURRENCY: z.coerce
    .number()
    .int()
    .min(1)
    .max(256)
    .default(128)
    .describe("events of one fetched batch fanned out at once, the same tenant's too"),
});

export type Config = z.infer<typeof configSchema>;
export const readConfig = (env?: Record<string, string | undefined>): Readonly<Config> => loadConfig(configSchema, env);
