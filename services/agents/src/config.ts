import {
  commaList,
  commonEnv,
  grpcServerEnv,
  loadConfig,
  masterSecret,
  previousMasterSecrets,
} from '@voiceapi/kit/config';
import { calleeAddresses } from '@voiceapi/kit/grpc';
import { grpcCallees } from '@voiceapi/proto';
import { z } from 'zod';

/** The services agents calls; their address settings and defaults come from services/manifest.json. */
export const callees = {
  /** Companies: the agent's company profile (checked, the latest by default, read for scripts). */
  companies: grpcCallees.companies,
  /** Telephony: the agent's number must be one the tenant owns. */
  telephony: grpcCallees.telephony,
  /** Knowledge: linked documents resolved, and their text read for scripts. */
  knowledge: grpcCallees.knowledge,
};

export const configSchema = z.object({
  ...commonEnv,
  ...grpcServerEnv,
  GRPC_HOST: z.string().default('127.0.0.1'),
  GRPC_PORT: z.coerce.number().int().min(0).max(65535).default(50066),
  MONGO_DB: z.string().default('agents'),
  ...calleeAddresses(callees),
  GRPC_DEADLINE_MS: z.coerce.number().int().positive().default(5_000),
  /** Seals tenants' custom-API secrets at rest (AES-256-GCM, key derived per purpose). Never leaves this service. */
  AGENT_SECRETS_KEY: masterSecret,
  /** While AGENT_SECRETS_KEY is rotated: the earlier keys, which still open what they sealed (docs/operations.md). */
  AGENT_SECRETS_PREVIOUS_KEYS: previousMasterSecrets,
  /** `host:port` entries the custom-API client may reach although private or loopback, over http too. */
  OUTBOUND_ALLOWLIST: commaList,
  /** An HTTP CONNECT proxy (`http://host:port`, e.g. Smokescreen) every custom-API call goes through; empty: direct. */
  OUTBOUND_PROXY: z.string().trim().default(''),
  /** The script generator: `local` (deterministic, no model, no network). */
  SCRIPT_GENERATOR: z.enum(['local']).default('local'),
  /** The safety net: a recorded request wakes the workers at once (a change stream); a lapsed claim is taken over at the next pass. */
  SCRIPT_WORKER_INTERVAL_MS: z.coerce.number().int().min(50).default(30_000),
  /** A script request claimed this long ago without an outcome (its replica died) is taken over. */
  SCRIPT_CLAIM_MS: z.coerce.number().int().min(1_000).default(60_000),
  /**
   * How long an agent read on a call's path is kept at most: this replica's changes empty the
   * cache at once, another replica's are seen within this (decision 0141).
   */
  AGENT_CACHE_TTL_MS: z.coerce.number().int().min(1_000).default(1_000),
  /** The most knowledge documents one agent links. */
  MAX_SELECTED_KNOWLEDGEBASES: z.coerce.number().int().min(1).max(100).default(20),
});

export type Config = z.infer<typeof configSchema>;
export const readConfig = (env?: Record<string, string | undefined>): Readonly<Config> => loadConfig(configSchema, env);
