import { commonEnv, loadConfig, parsedSetting, ownDatabase } from '@voiceapi/kit/config';
import { calleeSettings, grpcServiceEnv } from '@voiceapi/kit/grpc';
import { grpcCallees } from '@voiceapi/proto';
import { z } from 'zod';
import { parseWindowSetting } from './domain/calling-window';

/**
 * The services leads calls; their address settings and defaults come from services/manifest.json, what leads calls
 * each for is their settings' description (below).
 */
export const callees = {
  billing: grpcCallees.billing,
  webhooks: grpcCallees.webhooks,
};

export const configSchema = z.object({
  ...commonEnv,
  ...grpcServiceEnv(grpcCallees.leads),
  ...ownDatabase('leads'),
  ...calleeSettings(callees, {
    billing: "whether a live `call` lead's wallet covers one call's hold",
    webhooks: "whether a tenant has an endpoint for its contacts' status changes (none: they are not announced)",
  }),
  WEBHOOK_TYPES_CACHE_MS: z.coerce
    .number()
    .int()
    .min(0)
    .default(5_000)
    .describe(
      "how long webhooks' answer is kept: a tenant's new endpoint gets contact status changes from at most this " +
        'long after it is registered',
    ),
  CALLING_WINDOW_DEFAULT: parsedSetting('08:00-21:00', parseWindowSetting).describe(
    "the calling window of campaigns created without one, in the called party's local time: `HH:MM-HH:MM` or " +
      '`always`',
  ),
  /** Decision 0141. */
  SCHEDULER_INTERVAL_MS: z.coerce
    .number()
    .int()
    .min(50)
    .default(30_000)
    .describe(
      'how often the scheduler looks while it holds its lease alone (its own items wake it); while another ' +
        'replica contends for the lease it looks every second',
    ),
  MESSAGE_ADAPTER: z
    .enum(['record'])
    .default('record')
    .describe('`record`: messages are rendered and kept for the operator, never sent live'),
});

export type Config = z.infer<typeof configSchema>;
export const readConfig = (env?: Record<string, string | undefined>): Readonly<Config> => loadConfig(configSchema, env);
