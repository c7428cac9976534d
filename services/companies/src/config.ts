import { commonEnv, loadConfig, ownDatabase } from '@voiceapi/kit/config';
import { grpcServiceEnv } from '@voiceapi/kit/grpc';
import { grpcCallees } from '@voiceapi/proto';
import { z } from 'zod';

export const configSchema = z.object({
  ...commonEnv,
  ...grpcServiceEnv(grpcCallees.companies),
  ...ownDatabase('companies'),
});

export type Config = z.infer<typeof configSchema>;
export const readConfig = (env?: Record<string, string | undefined>): Readonly<Config> => loadConfig(configSchema, env);
