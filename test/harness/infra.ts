import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { S3Settings } from '@voiceapi/kit/objects';

export interface Infra {
  mongoUrl: string;
  kafkaBrokers: string;
  /** OBJECT_STORE_* settings of the object store (endpoint, keys): every process that keeps objects gets them. */
  objectStoreEnv: Record<string, string>;
  source: 'environment' | 'testcontainers' | 'local processes';
  /** The embedded store's process, when the harness started it (benchmarks read its CPU). */
  storePid?: number;
  /** Kafka's process, likewise. */
  kafkaPid?: number;
  stop(): Promise<void>;
}

/** Makes `infra` the servers of every process this one starts (MONGO_URL, KAFKA_BROKERS, OBJECT_STORE_*). */
export function useInfra(infra: Infra): void {
  process.env.MONGO_URL = infra.mongoUrl;
  process.env.KAFKA_BROKERS = infra.kafkaBrokers;
  Object.assign(process.env, infra.objectStoreEnv);
}

/** The harness's object store settings (OBJECT_STORE_*, set by global-setup.ts), for a process a test starts itself. */
export const objectStoreSettings = (): Record<string, string> =>
  Object.fromEntries(
    Object.entries(process.env).filter((e): e is [string, string] => e[0].startsWith('OBJECT_STORE_') && !!e[1]),
  );

/** The S3 adapter's settings for `bucket` on the harness's object store, or on the server whose OBJECT_STORE_* `env` names. */
export const s3SettingsFor = (bucket: string, env: Record<string, string> = objectStoreSettings()): S3Settings => ({
  OBJECT_STORE_ENDPOINT: env.OBJECT_STORE_ENDPOINT,
  OBJECT_STORE_REGION: env.OBJECT_STORE_REGION ?? 'us-east-1',
  OBJECT_STORE_BUCKET: bucket,
  OBJECT_STORE_FORCE_PATH_STYLE: true,
  OBJECT_STORE_ACCESS_KEY_ID: env.OBJECT_STORE_ACCESS_KEY_ID,
  OBJECT_STORE_SECRET_ACCESS_KEY: env.OBJECT_STORE_SECRET_ACCESS_KEY,
});

/** Every server setting of the harness's servers (MONGO_URL, KAFKA_BROKERS, OBJECT_STORE_*), for a process a test starts. */
export const serverSettings = (): Record<string, string> => ({
  MONGO_URL: process.env.MONGO_URL!,
  KAFKA_BROKERS: process.env.KAFKA_BROKERS!,
  ...objectStoreSettings(),
});

const dockerAvailable = (): boolean => Boolean(process.env.DOCKER_HOST) || existsSync('/var/run/docker.sock');

/**
 * Real servers for integration and end-to-end tests, in this order: addresses given in the
 * environment (MONGO_URL, KAFKA_BROKERS and OBJECT_STORE_ENDPOINT with its keys); testcontainers
 * where a Docker engine exists (mongo:7 and Kafka, the object store a local process); otherwise
 * the embedded store (SecantusDB), Kafka and the object store (versitygw) started here as local
 * processes.
 * Never an in-memory fake.
 */
export async function provideInfra(log: (line: string) => void = () => undefined): Promise<Infra> {
  if (process.env.MONGO_URL && process.env.KAFKA_BROKERS && process.env.OBJECT_STORE_ENDPOINT) {
    return {
      mongoUrl: process.env.MONGO_URL,
      kafkaBrokers: process.env.KAFKA_BROKERS,
      objectStoreEnv: objectStoreSettings(),
      source: 'environment',
      stop: async () => undefined,
    };
  }
  if (dockerAvailable() && process.env.TEST_INFRA !== 'local') {
    try {
      return await fromTestcontainers();
    } catch (err) {
      log(`testcontainers unavailable (${err instanceof Error ? err.message : String(err)}); starting local servers`);
    }
  }
  const { startLocalInfra, LOCAL_SESSION_TIMEOUT_MS } = await import('@voiceapi/local-infra');
  const dataDir = mkdtempSync(path.join(tmpdir(), 'voiceapi-test-'));
  // The servers' data (a few hundred MB a run) goes with them, whether stopped or left at exit: runs
  // that kept it filled this machine's disk until the live cluster's nodes refused pods (disk pressure).
  const removeData = () => rmSync(dataDir, { recursive: true, force: true });
  process.once('exit', removeData);
  const infra = await startLocalInfra({ dataDir, log });
  // The local Kafka allows a short consumer session: every process under test uses it (decision 0119).
  process.env.KAFKA_SESSION_TIMEOUT_MS ??= String(LOCAL_SESSION_TIMEOUT_MS);
  return {
    mongoUrl: infra.mongoUrl,
    kafkaBrokers: infra.kafkaBrokers.join(','),
    objectStoreEnv: infra.objectStoreEnv,
    source: 'local processes',
    storePid: infra.store.pid,
    kafkaPid: infra.kafka.pid,
    stop: async () => {
      await infra.stop();
      removeData();
    },
  };
}

async function fromTestcontainers(): Promise<Infra> {
  const { startObjectStore, objectStoreEnv } = await import('@voiceapi/local-infra');
  const objects = await startObjectStore({ dataDir: mkdtempSync(path.join(tmpdir(), 'voiceapi-objects-')) });
  // Loaded only where Docker exists; the package is an optional dependency of the test workspace.
  const req = (m: string) => import(m) as Promise<Record<string, new (image: string) => { start(): Promise<any> }>>;
  const { MongoDBContainer } = await req('@testcontainers/mongodb');
  const { KafkaContainer } = await req('@testcontainers/kafka');
  const [mongo, kafka] = await Promise.all([
    new MongoDBContainer!('mongo:7').start(),
    new (KafkaContainer as any)('confluentinc/cp-kafka:7.7.1').withKraft().start(),
  ]);
  return {
    mongoUrl: `${mongo.getConnectionString()}/?directConnection=true`,
    kafkaBrokers: `${kafka.getHost()}:${kafka.getMappedPort(9093)}`,
    objectStoreEnv: objectStoreEnv(objects),
    source: 'testcontainers',
    stop: async () => {
      await Promise.all([mongo.stop(), kafka.stop(), objects.stop()]);
    },
  };
}
