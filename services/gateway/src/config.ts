import { commonEnv, loadConfig, ownDatabase } from '@voiceapi/kit/config';
import { calleeSettings } from '@voiceapi/kit/grpc';
import { grpcCallees } from '@voiceapi/proto';
import { z } from 'zod';

/** The gateway calls every gRPC service of the manifest; their address settings and defaults come from there. */
export const callees = grpcCallees;

export const configSchema = z.object({
  ...commonEnv,
  HOST: z.string().default('127.0.0.1').describe('the address the HTTP server listens on'),
  PORT: z.coerce.number().int().min(0).max(65535).default(8080).describe('the HTTP port'),
  ...ownDatabase('gateway'),
  ADMIN_TOKEN: z
    .string()
    .min(16, 'must be at least 16 characters')
    .describe('operator API bearer token (at least 16 characters)'),
  /** The key of an HMAC over every stored key, so a database dump alone cannot confirm a key. */
  KEY_HASH_PEPPER: z
    .string()
    .min(16, 'must be at least 16 characters')
    .describe('secret mixed into stored key hashes (at least 16 characters; changing it invalidates every key)'),
  RATE_LIMIT_PER_SECOND: z.coerce
    .number()
    .int()
    .positive()
    .default(50)
    .describe("each key's limit unless the key sets `rateLimitPerSecond` (per replica)"),
  /** A mismatch is logged too. */
  RESPONSE_SCHEMA_CHECK: z
    .enum(['true', 'false'], { error: 'must be true or false' })
    .default('false')
    .transform((v) => v === 'true')
    .describe(
      'tests turn it on: every answer is checked against its documented schema, a mismatch answers 500 (it parses ' +
        'every answer: off in production)',
    ),
  /**
   * In bytes, the request line and header fields: 414 `uri_too_long` when the request line alone is over, else 431
   * `headers_too_large`.
   */
  MAX_HEADER_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .max(1024 * 1024)
    .default(16 * 1024)
    .describe('the largest request head; a longer one answers 414 or 431 with the error body'),
  BODY_LIMIT_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(100 * 1024)
    .describe('the largest JSON body accepted on any route'),
  ...calleeSettings(callees),
  CONTROL_RESYNC_MS: z.coerce
    .number()
    .int()
    .positive()
    .default(30_000)
    .describe('backstop re-read of the kill switch, should a control event be missed'),
  KEY_CACHE_TTL_MS: z.coerce
    .number()
    .int()
    .positive()
    .default(60_000)
    .describe('backstop lifetime of a cached key; a deactivation evicts it at once through Kafka'),
  LAST_USED_RESOLUTION_MS: z.coerce
    .number()
    .int()
    .positive()
    .default(60_000)
    .describe("a key's `lastUsedAt` is written at most this often per key and replica"),
  CALL_STREAM_KEEPALIVE_MS: z.coerce
    .number()
    .int()
    .positive()
    .default(15_000)
    .describe('a comment this often on an idle `GET /calls/stream` (proxies close silent connections)'),
  /** Dropped, its stream holds no memory. */
  CALL_STREAM_STALL_MS: z.coerce
    .number()
    .int()
    .positive()
    .default(60_000)
    .describe('a `GET /calls/stream` client that reads nothing this long is dropped'),
});

export type Config = z.infer<typeof configSchema>;
export const readConfig = (env?: Record<string, string | undefined>): Readonly<Config> => loadConfig(configSchema, env);
