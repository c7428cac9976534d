/**
 * @voiceapi/local-infra: Docker-free local infrastructure for `make run` and the test harness.
 *
 *  - the store, SecantusDB's Rust server (MongoDB wire protocol, WiredTiger): store.ts
 *  - Apache Kafka 3.9, single-node KRaft broker: kafka.ts
 *  - Versity's S3 gateway, the object store: object-store.ts
 *  - all three together: infra.ts; building them: install.ts (runs install.sh)
 *  - child processes that never outlive the parent: children.ts; restarts with backoff: supervisor.ts
 *  - readiness probes (mongodb driver, kafkajs): probes.ts; free ports: ports.ts
 *  - Prometheus taking OTLP metrics, for OBSERVE=1 and the alert tests: prometheus.ts
 *  - Alertmanager with the shipped configuration, receivers' URLs set: alertmanager.ts
 *  - the service manifest (services/manifest.json): manifest.ts
 *
 * Servers listen on 127.0.0.1 only and keep their data in the given directory across restarts.
 */
export { paths, type LogFn } from './paths';
export { ensureInstalled, isInstalled } from './install';
export { spawnProcess, runToCompletion, type ManagedProcess, type SpawnOptions } from './children';
export { freePorts, tcpOpen } from './ports';
export { mongoReady, kafkaReady, waitReady } from './probes';
export { startStore, storeUrl, type StoreOptions, type StoreHandle } from './store';
export {
  startObjectStore,
  objectStoreBinary,
  objectStoreEnv,
  OBJECT_STORE_VERSION,
  LOCAL_OBJECT_STORE_KEYS,
  type ObjectStoreOptions,
  type ObjectStoreHandle,
} from './object-store';
export { startKafka, LOCAL_SESSION_TIMEOUT_MS, type KafkaOptions, type KafkaHandle } from './kafka';
export {
  startPrometheus,
  prometheusBinary,
  PROMETHEUS_VERSION,
  type PrometheusOptions,
  type PrometheusHandle,
} from './prometheus';
export {
  startAlertmanager,
  alertmanagerBinary,
  alertmanagerConfig,
  ALERTMANAGER_CONFIG,
  type AlertReceivers,
  type AlertmanagerOptions,
  type AlertmanagerHandle,
} from './alertmanager';
export { startLocalInfra, infraDirs, type LocalInfraOptions, type LocalInfra } from './infra';
export {
  supervise,
  DEFAULT_BACKOFF,
  type Backoff,
  type Running,
  type SuperviseOptions,
  type Supervisor,
} from './supervisor';
export {
  loadManifest,
  parseManifest,
  addressSettings,
  manifestPath,
  processNodeOptions,
  PROCESS_NODE_OPTIONS,
  type Manifest,
  type ProcessEntry,
} from './manifest';
