import { commonEnv, grpcServerEnv, loadConfig } from '@voiceapi/kit';
import { z } from 'zod';

export const configSchema = z.object({
  ...commonEnv,
  ...grpcServerEnv,
  GRPC_HOST: z.string().default('127.0.0.1'),
  GRPC_PORT: z.coerce.number().int().min(0).max(65535).default(50061),
  MONGO_DB: z.string().default('companies'),
});

export type Config = z.infer<typeof configSchema>;
export const readConfig = (env?: Record<string, string | undefined>): Readonly<Config> => loadConfig(configSchema, env);
