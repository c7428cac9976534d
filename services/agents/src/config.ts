import {
  commaList,
  commonEnv,
  loadConfig,
  masterSecret,
  ownDatabase,
  previousMasterSecrets,
} from '@voiceapi/kit/config';
import { calleeSettings, grpcServiceEnv } from '@voiceapi/kit/grpc';
import { grpcCallees } from '@voiceapi/proto';
import { z } from 'zod';

/**
 * The services agents calls; their address settings and defaults come from services/manifest.json, what agents
 * calls each for is their settings' description (below).
 */
export const callees = {
  /** The company an agent names is also checked to exist; one that names none takes the tenant's latest. */
  companies: grpcCallees.companies,
  telephony: grpcCallees.telephony,
  knowledge: grpcCallees.knowledge,
};

export const configSchema = z.object({
  ...commonEnv,
  ...grpcServiceEnv(grpcCallees.agents),
  ...ownDatabase('agents'),
  ...calleeSettings(callees, {
    companies: "the agent's company profile, read for scripts",
    telephony: "the agent's number must be one the tenant owns",
    knowledge: 'linked documents, and their text read for scripts',
  }),
  /** AES-256-GCM, a key derived per purpose; it never leaves this service. */
  AGENT_SECRETS_KEY: masterSecret.describe(
    "seals tenants' custom-API secrets (at least 32 characters, the same on every replica; keep it with the " +
      "database's backups); `make run` makes one and keeps it in `.data/`",
  ),
  AGENT_SECRETS_PREVIOUS_KEYS: previousMasterSecrets.describe(
    'while the key is rotated, the earlier keys, comma-separated: they still open (docs/operations.md)',
  ),
  OUTBOUND_ALLOWLIST: commaList.describe(
    'comma-separated `host:port` entries the custom-API calls may reach although private or loopback, over plain ' +
      '`http:` too',
  ),
  OUTBOUND_PROXY: z
    .string()
    .trim()
    .default('')
    .describe(
      'an HTTP CONNECT egress proxy, `http://host:port` (e.g. Smokescreen), every custom-API call goes through, ' +
        'tunnelled, after the same checks (decision 0157); empty: direct',
    ),
  SCRIPT_GENERATOR: z.enum(['local']).default('local').describe('`local` (deterministic, no model, no network)'),
  /** What wakes the workers at once is a change stream. */
  SCRIPT_WORKER_INTERVAL_MS: z.coerce
    .number()
    .int()
    .min(50)
    .default(30_000)
    .describe(
      "the script worker's safety net: a recorded request wakes it at once; a lapsed claim is taken over at the " +
        'next pass',
    ),
  SCRIPT_CLAIM_MS: z.coerce
    .number()
    .int()
    .min(1_000)
    .default(60_000)
    .describe('a script request claimed this long ago without an outcome (its replica died) is taken over'),
  /** Decision 0141. */
  AGENT_CACHE_TTL_MS: z.coerce
    .number()
    .int()
    .min(1_000)
    .default(1_000)
    .describe(
      "agents read on a call's path are cached: this replica's changes empty the cache at once, another replica's " +
        'are seen within this',
    ),
  MAX_SELECTED_KNOWLEDGEBASES: z.coerce
    .number()
    .int()
    .min(1)
    .max(100)
    .default(20)
    .describe('the most knowledge documents one agent links'),
});

export type Config = z.infer<typeof configSchema>;
export const readConfig = (env?: Record<string, string | undefined>): Readonly<Config> => loadConfig(configSchema, env);
