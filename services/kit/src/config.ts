import { hostname } from 'node:os';
import { DEFAULT_SESSION_TIMEOUT_MS } from './events/kafka';
import { SLOW_COMMAND_COUNT_MS } from './mongo/store-ops';
import { z } from 'zod';

/**
 * Validates the environment against a schema once at start-up and returns a frozen, typed
 * object. A bad setting stops the process with one line per problem: config fails fast, and
 * nothing else in a process reads `process.env`.
 */
export function loadConfig<S extends z.ZodType>(
  schema: S,
  env: Record<string, string | undefined> = process.env,
): Readonly<z.infer<S>> {
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.') || '(env)'}: ${i.message}`);
    throw new ConfigError(`invalid configuration:\n${lines.join('\n')}`);
  }
  return Object.freeze(parsed.data);
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Settings every process shares. Spread into a process's own schema. */
export const commonEnv = {
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  MONGO_URL: z.string().regex(/^mongodb(\+srv)?:\/\//, 'must be a mongodb:// URL'),
  KAFKA_BROKERS: z
    .string()
    .min(1)
    .transform((s) =>
      s
        .split(',')
        .map((b) => b.trim())
        .filter(Boolean),
    ),
  /** How long a SIGTERM drain may take before remaining work is abandoned. */
  SHUTDOWN_GRACE_MS: z.coerce.number().int().positive().default(10_000),
  /** Unique per replica (the pod name in Kubernetes): names its broadcast groups and leases. */
  INSTANCE_ID: z.string().min(1).default(`${hostname()}-${process.pid}`),
  /** Partitions of the topics this service creates for the streams it owns. */
  KAFKA_TOPIC_PARTITIONS: z.coerce.number().int().min(1).max(1000).default(6),
  /**
   * Count every command sent to the store by collection and operation (metric
   * `voiceapi.store.operations`). It turns the driver's command monitoring on, which costs a
   * little per command (docs/performance.md, "Counting store operations").
   */
  STORE_OPS_COUNTING: z
    .enum(['true', 'false'])
    .default('true')
    .transform((v) => v === 'true'),
  /**
   * A store command this slow or slower (ms) is counted (metric `voiceapi.store.slow_commands`,
   * by collection and operation; the alert StoreSlowCommands reads it). Needs STORE_OPS_COUNTING
   * (the driver's command monitoring). Commands of a second or more are logged besides.
   */
  STORE_SLOW_COMMAND_MS: z.coerce.number().int().min(1).max(60_000).default(SLOW_COMMAND_COUNT_MS),
  /** Replication factor of those topics; -1 takes the broker's default. */
  KAFKA_REPLICATION_FACTOR: z.coerce.number().int().min(-1).max(10).default(-1),
  /**
   * How long a consumer that died without leaving holds its partitions (their events wait that
   * long). The default is every broker's default floor (`group.min.session.timeout.ms`); lower it
   * only where the brokers allow it (decision 0119).
   */
  KAFKA_SESSION_TIMEOUT_MS: z.coerce.number().int().min(1_000).max(300_000).default(DEFAULT_SESSION_TIMEOUT_MS),
};

/**
 * Settings of a process that serves gRPC. Clients keep a connection for as long as it works and
 * re-resolve DNS only when it fails, so a scaled-out service would get no traffic from callers
 * already running: the server closes each connection after a maximum age (with a grace period
 * for calls in flight), and callers reconnect to whatever the name resolves to now.
 */
export const grpcServerEnv = {
  GRPC_MAX_CONNECTION_AGE_MS: z.coerce.number().int().min(1_000).default(300_000),
  GRPC_MAX_CONNECTION_AGE_GRACE_MS: z.coerce.number().int().min(0).default(30_000),
};

/**
 * A gRPC dependency's address: `host:port` (resolved through DNS; a headless Service names every
 * pod), `dns:///host:port`, or a fixed list of backends, `ipv4:127.0.0.1:50062,127.0.0.1:50072`
 * (replicas on one machine). Calls are spread over every backend (round robin, grpc/client.ts).
 */
export const grpcAddress = z
  .string()
  .regex(
    /^(?:(?:dns:\/\/\/)?[\w.-]+:\d+|ipv4:[\d.]+:\d+(?:,[\d.]+:\d+)*)$/,
    'must be host:port, dns:///host:port or ipv4:host:port,host:port',
  );

/** A master secret that seals stored secrets (see `SecretBox`). */
export const masterSecret = z.string().min(32, 'must be at least 32 characters');

/**
 * Earlier master secrets that still open what they sealed while a key is rotated: comma-separated,
 * each at least 32 characters; empty (the default) when no rotation is under way.
 */
export const previousMasterSecrets = z
  .string()
  .default('')
  .transform((s) =>
    s
      .split(',')
      .map((k) => k.trim())
      .filter(Boolean),
  )
  .pipe(z.array(masterSecret));

/**
 * Settings of a process that keeps objects (spread into its schema), its bucket named by default
 * after what it keeps. Without an endpoint the SDK reaches AWS's S3 for the region; without keys it
 * takes the pod's identity (the SDK's default chain: web identity, the instance's role).
 */
export const objectStoreEnv = (defaultBucket: string) => ({
  OBJECT_STORE_ENDPOINT: z.string().url().optional(),
  OBJECT_STORE_REGION: z.string().min(1).default('us-east-1'),
  OBJECT_STORE_BUCKET: z
    .string()
    .regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, 'must be an S3 bucket name')
    .default(defaultBucket),
  /** Path-style addresses (`endpoint/bucket/key`): what most S3-compatible servers need. */
  OBJECT_STORE_FORCE_PATH_STYLE: z
    .enum(['true', 'false'])
    .default('false')
    .transform((v) => v === 'true'),
  OBJECT_STORE_ACCESS_KEY_ID: z.string().min(1).optional(),
  OBJECT_STORE_SECRET_ACCESS_KEY: z.string().min(1).optional(),
  /** Create the bucket when it is missing (local servers and tests); production's is provisioned. */
  OBJECT_STORE_CREATE_BUCKET: z
    .enum(['true', 'false'])
    .default('false')
    .transform((v) => v === 'true'),
});
