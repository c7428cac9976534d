import { commonEnv, loadConfig } from '@voiceapi/kit/config';
import { calleeAddresses } from '@voiceapi/kit/grpc';
import { grpcCallees } from '@voiceapi/proto';
import { z } from 'zod';

/** The gateway calls every gRPC service of the manifest; their address settings and defaults come from there. */
export const callees = grpcCallees;

export const configSchema = z.object({
  ...commonEnv,
  HOST: z.string().default('127.0.0.1'),
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  MONGO_DB: z.string().default('gateway'),
  /** Operator API bearer token. */
  ADMIN_TOKEN: z.string().min(16, 'must be at least 16 characters'),
  /** Secret mixed into every stored key hash (HMAC), so a database dump alone cannot confirm a key. */
  KEY_HASH_PEPPER: z.string().min(16, 'must be at least 16 characters'),
  RATE_LIMIT_PER_SECOND: z.coerce.number().int().positive().default(50),
  /**
   * Test harnesses only: every answer is checked against the route's documented response schema and
   * a mismatch answers 500 (and is logged). It parses every answer, so it stays off in production.
   */
  RESPONSE_SCHEMA_CHECK: z
    .enum(['true', 'false'], { error: 'must be true or false' })
    .default('false')
    .transform((v) => v === 'true'),
  /**
   * Largest request head (request line and header fields, bytes). Over it: 414 `uri_too_long` when
   * the request line alone is, else 431 `headers_too_large`, with the error body.
   */
  MAX_HEADER_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .max(1024 * 1024)
    .default(16 * 1024),
  /** Largest JSON body accepted on any route (bytes). */
  BODY_LIMIT_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(100 * 1024),
  GRPC_DEADLINE_MS: z.coerce.number().int().positive().default(5_000),
  ...calleeAddresses(callees),
  /** Backstop re-read of the kill switch in case a control event was missed. */
  CONTROL_RESYNC_MS: z.coerce.number().int().positive().default(30_000),
  /** Backstop lifetime of a cached key; deactivation normally evicts at once via Kafka. */
  KEY_CACHE_TTL_MS: z.coerce.number().int().positive().default(60_000),
  /** `lastUsedAt` is written at most this often per key and replica. */
  LAST_USED_RESOLUTION_MS: z.coerce.number().int().positive().default(60_000),
  /** `GET /calls/stream`: a comment this often on an idle stream (proxies close silent connections). */
  CALL_STREAM_KEEPALIVE_MS: z.coerce.number().int().positive().default(15_000),
  /** `GET /calls/stream`: a client that reads nothing this long is dropped, so its stream holds no memory. */
  CALL_STREAM_STALL_MS: z.coerce.number().int().positive().default(60_000),
});

export type Config = z.infer<typeof configSchema>;
export const readConfig = (env?: Record<string, string | undefined>): Readonly<Config> => loadConfig(configSchema, env);
