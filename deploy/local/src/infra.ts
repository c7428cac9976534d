import * as path from 'node:path';
import { ensureInstalled } from './install';
import { startKafka, type KafkaHandle } from './kafka';
import type { LogFn } from './paths';
import { startStore, type StoreHandle } from './store';

export interface LocalInfraOptions {
  /** The store's data goes to <dataDir>/mongo, Kafka's to <dataDir>/kafka. */
  dataDir: string;
  mongoPort?: number;
  kafkaPort?: number;
  kafkaControllerPort?: number;
  log?: LogFn;
  /** Run install.sh first when binaries are missing or stale (default true). */
  install?: boolean;
}

export interface LocalInfra {
  mongoUrl: string;
  kafkaBrokers: string[];
  store: StoreHandle;
  kafka: KafkaHandle;
  /** Resolves when either server exits (by stop() or on its own). */
  exited: Promise<string>;
  /** Stops both (in parallel). Safe to call more than once. */
  stop(): Promise<void>;
}

/** The data directories startLocalInfra uses under its dataDir (make run restarts a server there). */
export const infraDirs = (dataDir: string) => ({
  // Not 'mongo': that folder held FerretDB's SQLite files before the store replaced it.
  mongo: path.join(path.resolve(dataDir), 'store'),
  kafka: path.join(path.resolve(dataDir), 'kafka'),
});

/** The store and Kafka together, started in parallel; if either fails, neither is left running. */
export async function startLocalInfra(opts: LocalInfraOptions): Promise<LocalInfra> {
  if (opts.install !== false) await ensureInstalled();
  const dirs = infraDirs(opts.dataDir);
  const [f, k] = await Promise.allSettled([
    startStore({ dataDir: dirs.mongo, port: opts.mongoPort, log: opts.log }),
    startKafka({ dataDir: dirs.kafka, port: opts.kafkaPort, controllerPort: opts.kafkaControllerPort, log: opts.log }),
  ]);
  if (f.status === 'rejected' || k.status === 'rejected') {
    await Promise.all([f, k].map((r) => (r.status === 'fulfilled' ? r.value.stop() : Promise.resolve())));
    const errors = [f, k].flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
    throw errors.length === 1 ? errors[0] : new AggregateError(errors, 'local infra failed to start');
  }
  const store = f.value;
  const kafka = k.value;
  let stopping: Promise<void> | undefined;
  return {
    mongoUrl: store.url,
    kafkaBrokers: kafka.brokers,
    store,
    kafka,
    exited: Promise.race([
      store.exited.then((c) => `the store exited (${c})`),
      kafka.exited.then((c) => `kafka exited (${c})`),
    ]),
    stop: () => (stopping ??= Promise.all([store.stop(), kafka.stop()]).then(() => undefined)),
  };
}
