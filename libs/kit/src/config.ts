import { hostname } from 'node:os';
import { DEFAULT_SESSION_TIMEOUT_MS } from './events/kafka';
import { SLOW_COMMAND_COUNT_MS } from './mongo/store-ops';
import { z } from 'zod';

/** The environment validated once at start-up (one line per problem); nothing else reads `process.env`. */
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

const splitList = (text: string): string[] =>
  text
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean);

/** A comma-separated list (blanks dropped), empty when unset. */
export const commaList = z.string().default('').transform(splitList);

/** A setting read by `parse`: what it throws becomes the setting's error, and the process does not start. */
export const parsedSetting = <T>(fallback: string, parse: (text: string) => T) =>
  z
    .string()
    .default(fallback)
    .transform((text, ctx): T => {
      try {
        return parse(text);
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: err instanceof Error ? err.message : String(err) });
        return z.NEVER;
      }
    });

/** Settings every process shares. Spread into a process's own schema. */
export const commonEnv = {
  LOG_LEVEL: z
    .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
    .default('info')
    .describe('`fatal` … `trace`, `silent`'),
  MONGO_URL: z
    .string()
    .regex(/^mongodb(\+srv)?:\/\//, 'must be a mongodb:// URL')
    .describe('the store, a `mongodb://` or `mongodb+srv://` URL'),
  KAFKA_BROKERS: z.string().min(1).transform(splitList).describe('the Kafka brokers, comma-separated `host:port`'),
  SHUTDOWN_GRACE_MS: z.coerce
    .number()
    .int()
    .positive()
    .default(10_000)
    .describe('how long a SIGTERM drain may take, every step of it together, before what remains is abandoned'),
  INSTANCE_ID: z
    .string()
    .min(1)
    .default(`${hostname()}-${process.pid}`)
    .describe('unique per replica (the pod name in Kubernetes): names its broadcast groups and leases'),
  KAFKA_TOPIC_PARTITIONS: z.coerce
    .number()
    .int()
    .min(1)
    .max(1000)
    .default(6)
    .describe('partitions of the topics the process creates for the streams it owns'),
  /** Command monitoring costs a little per command (docs/performance.md, "Counting store operations"). */
  STORE_OPS_COUNTING: z
    .enum(['true', 'false'])
    .default('true')
    .transform((v) => v === 'true')
    .describe(
      'counts the commands sent to the store, by collection and operation (metric `voiceapi.store.operations`); ' +
        "`false` turns the driver's command monitoring off",
    ),
  STORE_SLOW_COMMAND_MS: z.coerce
    .number()
    .int()
    .min(1)
    .max(60_000)
    .default(SLOW_COMMAND_COUNT_MS)
    .describe(
      'store commands that took this long or longer are counted, by collection and operation (metric ' +
        '`voiceapi.store.slow_commands`; needs `STORE_OPS_COUNTING`)',
    ),
  KAFKA_REPLICATION_FACTOR: z.coerce
    .number()
    .int()
    .min(-1)
    .max(10)
    .default(-1)
    .describe("replication factor of those topics; `-1`: the broker's default"),
  KAFKA_SESSION_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(1_000)
    .max(300_000)
    .default(DEFAULT_SESSION_TIMEOUT_MS)
    .describe(
      "how long a consumer that died without leaving holds its partitions; the default is the brokers' floor " +
        '(`group.min.session.timeout.ms`): lower it only where the brokers allow it (decision 0119)',
    ),
};

/**
 * Connections are closed after a maximum age so callers re-resolve DNS and reach new replicas: a client
 * keeps a working connection forever, and a scaled-out service would get no traffic from it.
 */
export const grpcServerEnv = {
  GRPC_MAX_CONNECTION_AGE_MS: z.coerce
    .number()
    .int()
    .min(1_000)
    .default(300_000)
    .describe('connections are closed at this age so callers spread over new replicas'),
  GRPC_MAX_CONNECTION_AGE_GRACE_MS: z.coerce
    .number()
    .int()
    .min(0)
    .default(30_000)
    .describe('how long a connection closed for its age may finish the calls it carries'),
};

/** A gRPC dependency: `host:port` / `dns:///host:port` (a headless Service lists each pod), or `ipv4:a:p,b:p`. */
/** The database a process owns in the store, `name` unless set. */
export const ownDatabase = (name: string) => ({
  MONGO_DB: z.string().default(name).describe('the database the process owns in the store'),
});

export const grpcAddress = z
  .string()
  .regex(
    /^(?:(?:dns:\/\/\/)?[\w.-]+:\d+|ipv4:[\d.]+:\d+(?:,[\d.]+:\d+)*)$/,
    'must be host:port, dns:///host:port or ipv4:host:port,host:port',
  );

/** A master secret that seals stored secrets (see `SecretBox`). */
export const masterSecret = z.string().min(32, 'must be at least 32 characters');

/** Earlier master secrets, comma-separated, that still open what they sealed during a key rotation. */
export const previousMasterSecrets = commaList.pipe(z.array(masterSecret));

/**
 * The object store's settings (telephony's recordings, knowledge's documents), the bucket defaulting to
 * `defaultBucket`.
 */
export const objectStoreEnv = (defaultBucket: string) => ({
  OBJECT_STORE_ENDPOINT: z.string().url().optional().describe('the S3 API endpoint; unset: AWS S3'),
  OBJECT_STORE_REGION: z.string().min(1).default('us-east-1').describe("the object store's region"),
  OBJECT_STORE_BUCKET: z
    .string()
    .regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, 'must be an S3 bucket name')
    .default(defaultBucket)
    .describe('the bucket the service owns'),
  OBJECT_STORE_FORCE_PATH_STYLE: z
    .enum(['true', 'false'])
    .default('false')
    .transform((v) => v === 'true')
    .describe('path-style addresses (`endpoint/bucket/key`): `true` for most S3-compatible servers'),
  OBJECT_STORE_ACCESS_KEY_ID: z
    .string()
    .min(1)
    .optional()
    .describe(
      "the object store's access key; unset (with the secret): the AWS SDK's default chain, e.g. the pod's identity",
    ),
  OBJECT_STORE_SECRET_ACCESS_KEY: z.string().min(1).optional().describe('the secret of that access key'),
  /** Production's bucket is provisioned. */
  OBJECT_STORE_CREATE_BUCKET: z
    .enum(['true', 'false'])
    .default('false')
    .transform((v) => v === 'true')
    .describe('create the bucket when it is missing (local servers and tests); `false`: the bucket must exist'),
});
