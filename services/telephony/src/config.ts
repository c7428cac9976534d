import { commonEnv, loadConfig, objectStoreEnv, ownDatabase } from '@voiceapi/kit/config';
import { calleeSettings, grpcServiceEnv } from '@voiceapi/kit/grpc';
import { grpcCallees } from '@voiceapi/proto';
import { z } from 'zod';

/**
 * The services telephony calls; their address settings and defaults come from services/manifest.json, what
 * telephony calls each for is their settings' description (below).
 */
export const callees = {
  billing: grpcCallees.billing,
  /** Contact checks too. */
  leads: grpcCallees.leads,
  /** The conversation includes the agent's custom API. */
  agents: grpcCallees.agents,
};

export const configSchema = z.object({
  ...commonEnv,
  ...grpcServiceEnv(grpcCallees.telephony),
  /** Call recordings: the S3 bucket telephony owns. */
  ...objectStoreEnv('voiceapi-recordings'),
  ...ownDatabase('telephony'),
  ...calleeSettings(callees, {
    billing: 'holds before a dial or on answer, settlements, number sales',
    leads: 'a dial request is claimed (its checks made again) before it is dialled',
    agents: 'who answers an inbound call, and its conversation',
  }),
  PLATFORM_FROM_NUMBER: z
    .string()
    .regex(/^\+[1-9]\d{6,14}$/, 'must be an E.164 number')
    .default('+18885550100')
    .describe("what outbound calls are placed from when their campaign names no number of the tenant's"),
  CARRIER_ADAPTER: z
    .enum(['simulator'])
    .default('simulator')
    .describe('`simulator` (no telephone network is reachable from here)'),
  CARRIER_SIMULATOR_SPEEDUP: z.coerce
    .number()
    .min(1)
    .max(100_000)
    .default(1)
    .describe('how many times faster than real time simulated calls run (durations and charges stay simulated)'),
  /** HMAC-SHA256. */
  RECORDING_URL_SECRET: z
    .string()
    .min(32, 'must be at least 32 characters')
    .describe(
      'signs recording links (at least 32 characters, the same on every replica; never leaves the service); ' +
        '`make run` makes one and keeps it in `.data/`',
    ),
  RECORDING_URL_TTL_SECONDS: z.coerce
    .number()
    .int()
    .min(10)
    .max(900)
    .default(600)
    .describe('lifetime of a signed recording link (at most 900)'),
  RECORDING_RETENTION_DAYS: z.coerce
    .number()
    .int()
    .min(1)
    .max(36_500)
    .optional()
    .describe('unset: recordings are kept; set, each recording is removed that many days after it was stored'),
  INBOUND_MAX_CALL_SECONDS: z.coerce
    .number()
    .int()
    .min(60)
    .max(14_400)
    .default(3_600)
    .describe('the longest inbound call: its hold covers this, and the call is ended there'),
  DEFAULT_MAX_CONCURRENT_CALLS: z.coerce
    .number()
    .int()
    .min(1)
    .max(1_000)
    .default(10)
    .describe('calls in progress at once per tenant until the operator sets its package'),
  /** Decision 0113. */
  NUMBER_CACHE_TTL_MS: z.coerce
    .number()
    .int()
    .min(1_000)
    .default(60_000)
    .describe(
      'numbers looked up by inbound calls are cached, emptied when any replica changes the pool; this bounds a ' +
        'missed change',
    ),
  /** It catches what a down change stream missed; a changed package wakes it at once too. */
  DISPATCH_INTERVAL_MS: z.coerce
    .number()
    .int()
    .min(20)
    .default(10_000)
    .describe("the dispatcher's safety net: a queued dial or a freed line wakes it at once"),
  RECOVERY_INTERVAL_MS: z.coerce
    .number()
    .int()
    .min(100)
    .default(15_000)
    .describe('how often the calls a crashed replica was carrying are finished, and stray lines freed'),
  ROLLUP_INTERVAL_MS: z.coerce
    .number()
    .int()
    .min(50)
    .default(30_000)
    .describe("the rollup worker's safety net: a bucket marked for recompute wakes it at once"),
});

export type Config = z.infer<typeof configSchema>;
export const readConfig = (env?: Record<string, string | undefined>): Readonly<Config> => loadConfig(configSchema, env);
