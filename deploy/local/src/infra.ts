import * as path from 'node:path';
import { ensureInstalled } from './install';
import { startKafka, type KafkaHandle } from './kafka';
import { objectStoreEnv, startObjectStore, type ObjectStoreHandle } from './object-store';
import type { LogFn } from './paths';
import { startStore, type StoreHandle } from './store';

export interface LocalInfraOptions {
  /** The store's data goes to <dataDir>/store, Kafka's to <dataDir>/kafka, the objects to <dataDir>/objects. */
  dataDir: string;
  mongoPort?: number;
  kafkaPort?: number;
  kafkaControllerPort?: number;
  objectStorePort?: number;
  log?: LogFn;
  /** Run install.sh first when binaries are missing or stale (default true). */
  install?: boolean;
}

export interface LocalInfra {
  mongoUrl: string;
  kafkaBrokers: string[];
  /** The OBJECT_STORE_* settings of a process that keeps objects there (its bucket apart). */
  objectStoreEnv: Record<string, string>;
  store: StoreHandle;
  kafka: KafkaHandle;
  objectStore: ObjectStoreHandle;
  /** Resolves when any server exits (by stop() or on its own). */
  exited: Promise<string>;
  /** Stops them all (in parallel). Safe to call more than once. */
  stop(): Promise<void>;
}

/** The data directories startLocalInfra uses under its dataDir (make run restarts a server there). */
export const infraDirs = (dataDir: string) => ({
  // Not 'mongo': that folder held FerretDB's SQLite files before the store replaced it.
  mongo: path.join(path.resolve(dataDir), 'store'),
  kafka: path.join(path.resolve(dataDir), 'kafka'),
  objects: path.join(path.resolve(dataDir), 'objects'),
});

/** The store, Kafka and the object store together, started in parallel; if one fails, none is left running. */
export async function startLocalInfra(opts: LocalInfraOptions): Promise<LocalInfra> {
  if (opts.install !== false) await ensureInstalled();
  const dirs = infraDirs(opts.dataDir);
  const started = await Promise.allSettled([
    startStore({ dataDir: dirs.mongo, port: opts.mongoPort, log: opts.log }),
    startKafka({ dataDir: dirs.kafka, port: opts.kafkaPort, controllerPort: opts.kafkaControllerPort, log: opts.log }),
    startObjectStore({ dataDir: dirs.objects, port: opts.objectStorePort, log: opts.log }),
  ]);
  const [f, k, o] = started;
  if (f.status === 'rejected' || k.status === 'rejected' || o.status === 'rejected') {
    await Promise.all(started.map((r) => (r.status === 'fulfilled' ? r.value.stop() : Promise.resolve())));
    const errors = started.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
    throw errors.length === 1 ? errors[0] : new AggregateError(errors, 'local infra failed to start');
  }
  const store = f.value;
  const kafka = k.value;
  const objectStore = o.value;
  let stopping: Promise<void> | undefined;
  return {
    mongoUrl: store.url,
    kafkaBrokers: kafka.brokers,
    objectStoreEnv: objectStoreEnv(objectStore),
    store,
    kafka,
    objectStore,
    exited: Promise.race([
      store.exited.then((c) => `the store exited (${c})`),
      kafka.exited.then((c) => `kafka exited (${c})`),
      objectStore.exited.then((c) => `the object store exited (${c})`),
    ]),
    stop: () => (stopping ??= Promise.all([store.stop(), kafka.stop(), objectStore.stop()]).then(() => undefined)),
  };
}
