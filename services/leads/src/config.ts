import { commonEnv, grpcServerEnv, loadConfig, parsedSetting } from '@voiceapi/kit/config';
import { calleeAddresses } from '@voiceapi/kit/grpc';
import { grpcCallees } from '@voiceapi/proto';
import { z } from 'zod';
import { parseWindowSetting } from './domain/calling-window';

/** The services leads calls; their address settings and defaults come from services/manifest.json. */
export const callees = {
  /** Billing: whether a live call lead's wallet covers one call's hold. */
  billing: grpcCallees.billing,
  /** Webhooks: whether a tenant has an endpoint for its contacts' status changes (none: they are not announced). */
  webhooks: grpcCallees.webhooks,
};

export const configSchema = z.object({
  ...commonEnv,
  ...grpcServerEnv,
  GRPC_HOST: z.string().default('127.0.0.1'),
  GRPC_PORT: z.coerce.number().int().min(0).max(65535).default(50063),
  MONGO_DB: z.string().default('leads'),
  ...calleeAddresses(callees),
  /**
   * How long webhooks' answer (whether a tenant has an endpoint for status changes) is kept: a new endpoint gets
   * status changes at most this long after it is registered.
   */
  WEBHOOK_TYPES_CACHE_MS: z.coerce.number().int().min(0).default(5_000),
  GRPC_DEADLINE_MS: z.coerce.number().int().positive().default(5_000),
  /** Campaigns' calling window when they set none (called party's time): `HH:MM-HH:MM` or `always`. */
  CALLING_WINDOW_DEFAULT: parsedSetting('08:00-21:00', parseWindowSetting),
  /**
   * The scheduler's safety-net look while it holds its lease alone (due items wake it anyway); while another
   * replica contends for the lease it looks every second (decision 0141).
   */
  SCHEDULER_INTERVAL_MS: z.coerce.number().int().min(50).default(30_000),
  /** Where messages go: `record` keeps the rendered message for the operator, never sends it live. */
  MESSAGE_ADAPTER: z.enum(['record']).default('record'),
});

export type Config = z.infer<typeof configSchema>;
export const readConfig = (env?: Record<string, string | undefined>): Readonly<Config> => loadConfig(configSchema, env);
