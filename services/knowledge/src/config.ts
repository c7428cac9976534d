import { commonEnv, loadConfig, objectStoreEnv, ownDatabase } from '@voiceapi/kit/config';
import { calleeSettings, grpcServiceEnv } from '@voiceapi/kit/grpc';
import { grpcCallees } from '@voiceapi/proto';
import { z } from 'zod';

/**
 * The services knowledge calls; their address settings and defaults come from services/manifest.json, what knowledge
 * calls each for is their settings' description (below).
 */
export const callees = {
  billing: grpcCallees.billing,
};

export const configSchema = z.object({
  ...commonEnv,
  /** Uploaded documents and their extracted text: the S3 bucket knowledge owns. */
  ...objectStoreEnv('voiceapi-knowledge'),
  ...grpcServiceEnv(grpcCallees.knowledge),
  ...ownDatabase('knowledge'),
  ...calleeSettings(callees, {
    billing: "the rate card, the balance, and each live upload's debit",
  }),
  KNOWLEDGE_MAX_FILE_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .max(100 * 1024 * 1024)
    .default(20 * 1024 * 1024)
    .describe('the largest document accepted (the gateway refuses larger bodies before they arrive)'),
  RECOVERY_INTERVAL_MS: z.coerce
    .number()
    .int()
    .min(100)
    .default(30_000)
    .describe('how often uploads a crashed replica left between storing and charging are finished or undone'),
  PENDING_UPLOAD_GRACE_MS: z.coerce
    .number()
    .int()
    .min(0)
    .default(60_000)
    .describe('an upload still pending after this long is taken over by recovery'),
});

export type Config = z.infer<typeof configSchema>;
export const readConfig = (env?: Record<string, string | undefined>): Readonly<Config> => loadConfig(configSchema, env);
