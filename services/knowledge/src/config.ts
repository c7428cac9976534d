import { commonEnv, grpcServerEnv, loadConfig, objectStoreEnv } from '@voiceapi/kit/config';
import { calleeAddresses } from '@voiceapi/kit/grpc';
import { grpcCallees } from '@voiceapi/proto';
import { z } from 'zod';

/** The services knowledge calls; their address settings and defaults come from services/manifest.json. */
export const callees = {
  /** Billing: the rate card, the balance, and the debit of each live upload. */
  billing: grpcCallees.billing,
};

export const configSchema = z.object({
  ...commonEnv,
  /** Uploaded documents and their extracted text: the S3 bucket knowledge owns. */
  ...objectStoreEnv('voiceapi-knowledge'),
  ...grpcServerEnv,
  GRPC_HOST: z.string().default('127.0.0.1'),
  GRPC_PORT: z.coerce.number().int().min(0).max(65535).default(50065),
  MONGO_DB: z.string().default('knowledge'),
  ...calleeAddresses(callees),
  GRPC_DEADLINE_MS: z.coerce.number().int().positive().default(5_000),
  /** The largest document accepted, in bytes (the gateway refuses larger bodies before they arrive). */
  KNOWLEDGE_MAX_FILE_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .max(100 * 1024 * 1024)
    .default(20 * 1024 * 1024),
  /** How often uploads a crashed replica left between storing and charging are finished or undone. */
  RECOVERY_INTERVAL_MS: z.coerce.number().int().min(100).default(30_000),
  /** An upload still pending after this long is taken over by recovery. */
  PENDING_UPLOAD_GRACE_MS: z.coerce.number().int().min(0).default(60_000),
});

export type Config = z.infer<typeof configSchema>;
export const readConfig = (env?: Record<string, string | undefined>): Readonly<Config> => loadConfig(configSchema, env);
