import { commonEnv, grpcServerEnv, loadConfig, objectStoreEnv } from '@voiceapi/kit/config';
import { calleeAddresses } from '@voiceapi/kit/grpc';
import { grpcCallees } from '@voiceapi/proto';
import { z } from 'zod';

/** The services telephony calls; their address settings and defaults come from services/manifest.json. */
export const callees = {
  /** Billing: holds before a dial or on answer, number purchases. */
  billing: grpcCallees.billing,
  /** Leads: a dial request is claimed (the checks again) before it is dialled; contact checks. */
  leads: grpcCallees.leads,
  /** Agents: who answers an inbound call, and the conversation it holds (custom API included). */
  agents: grpcCallees.agents,
};

export const configSchema = z.object({
  ...commonEnv,
  ...grpcServerEnv,
  /** Call recordings: the S3 bucket telephony owns. */
  ...objectStoreEnv('voiceapi-recordings'),
  GRPC_HOST: z.string().default('127.0.0.1'),
  GRPC_PORT: z.coerce.number().int().min(0).max(65535).default(50064),
  MONGO_DB: z.string().default('telephony'),
  ...calleeAddresses(callees),
  /** The platform's number outbound calls are placed from when their campaign has none of its own. */
  PLATFORM_FROM_NUMBER: z
    .string()
    .regex(/^\+[1-9]\d{6,14}$/, 'must be an E.164 number')
    .default('+18885550100'),
  GRPC_DEADLINE_MS: z.coerce.number().int().positive().default(5_000),
  /** The carrier adapter: `simulator` (no telephone network is reachable from here). */
  CARRIER_ADAPTER: z.enum(['simulator']).default('simulator'),
  /** How many times faster than real time simulated calls run; durations and charges stay simulated. */
  CARRIER_SIMULATOR_SPEEDUP: z.coerce.number().min(1).max(100_000).default(1),
  /** Signs recording URLs (HMAC-SHA256); the same on every replica. Never leaves this service. */
  RECORDING_URL_SECRET: z.string().min(32, 'must be at least 32 characters'),
  /** Lifetime of a signed recording URL (at most 15 minutes). */
  RECORDING_URL_TTL_SECONDS: z.coerce.number().int().min(10).max(900).default(600),
  /** Recordings are removed this many days after they were stored; unset (the default): kept. */
  RECORDING_RETENTION_DAYS: z.coerce.number().int().min(1).max(36_500).optional(),
  /** The longest inbound call: its hold covers this, and the call is ended there. */
  INBOUND_MAX_CALL_SECONDS: z.coerce.number().int().min(60).max(14_400).default(3_600),
  /** Calls in progress at once per tenant until the operator sets its package. */
  DEFAULT_MAX_CONCURRENT_CALLS: z.coerce.number().int().min(1).max(1_000).default(10),
  /** Longest a cached number is kept, should a change stream miss a change (decision 0113). */
  NUMBER_CACHE_TTL_MS: z.coerce.number().int().min(1_000).default(60_000),
  /** Safety net for what a down change stream missed: queued dials, freed lines and packages wake it at once. */
  DISPATCH_INTERVAL_MS: z.coerce.number().int().min(20).default(10_000),
  /** How often calls a crashed replica was carrying are finished, and stray lines freed. */
  RECOVERY_INTERVAL_MS: z.coerce.number().int().min(100).default(15_000),
  /** The rollup worker's safety net: a bucket marked for recompute wakes it at once. */
  ROLLUP_INTERVAL_MS: z.coerce.number().int().min(50).default(30_000),
});

export type Config = z.infer<typeof configSchema>;
export const readConfig = (env?: Record<string, string | undefined>): Readonly<Config> => loadConfig(configSchema, env);
