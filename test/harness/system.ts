import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { addressSettings, loadManifest, tcpOpen } from '@voiceapi/local-infra';
import { serverSettings } from './infra';
import { entryIn } from './release-build';
import { freePort, startProcess, waitFor, type Proc } from './processes';
import { readStoreOps, type StoreOpsByProcess } from './store-ops';

export const ADMIN_TOKEN = 'test-admin-token-0123456789';
const PEPPER = 'test-pepper-0123456789abcdef';

/** services/manifest.json: every gRPC service listed there is started, and the gateway is given every address. */
const manifest = loadManifest();

export interface Gateway {
  url: string;
  proc: Proc;
}

export interface Replica {
  proc: Proc;
  /** Its `INSTANCE_ID`: what it holds leases and claims as. */
  instanceId: string;
  /** The port it serves gRPC on. */
  port: number;
}

export interface System {
  gateways: Gateway[];
  /** The running process of every gRPC service in the manifest, by name. */
  services: Record<string, Proc>;
  /** Each service's port, fixed for the suite so a restarted service is found at the same address. */
  ports: Record<string, number>;
  /** The ports of a service started as several replicas (`replicas`), the first being `ports[name]`: every caller
   * is given all of them as one address (`ipv4:…,…`), as a headless Service lists its pods. */
  replicaPorts: Record<string, number[]>;
  /** The gateway replicas' MongoDB database (tests may look at what the gateway stored). */
  gatewayDb: string;
  /** Settings every process gets (MONGO_URL, KAFKA_BROKERS, OBJECT_STORE_*); a suite may add to it before a (re)start. */
  env: Record<string, string>;
  /**
   * The checkout each process is (re)started from, by manifest name (default this one): a suite
   * runs another release's build of some processes beside this one's (test/harness/release-build.ts).
   */
  builds: Record<string, string>;
  /** (Re)starts one manifest service (its `replica`th process when it runs several) and waits until it listens. */
  startService(name: string, extra?: Record<string, string>, replica?: number): Promise<Proc>;
  /**
   * Starts one more replica of a manifest service, on a port of its own (the other services keep
   * calling the first replica's address; the replicas share its database, Kafka groups and leases).
   */
  startReplica(name: string, extra?: Record<string, string>): Promise<Replica>;
  /** Every process started of a service (the first replica, its restarts and the extra replicas), with their instance ids. */
  replicasOf(name: string): Replica[];
  /** Shorthands for the companies service, used by suites that stop and start it. */
  readonly companies: Proc;
  readonly companiesPort: number;
  startCompanies(): Promise<Proc>;
  /** Starts a gateway replica, on `port` when given (a restarted gateway at its old address). */
  startGateway(extra?: Record<string, string>, port?: number): Promise<Gateway>;
  /** Every running process's store operations so far, by process, collection and operation. */
  storeOps(): Promise<StoreOpsByProcess>;
  stop(): Promise<void>;
}

/**
 * Starts the real processes (every service of the manifest and gateway replicas) against the
 * harness's MongoDB and Kafka, each suite in databases of its own.
 */
export async function startSystem(
  opts: {
    gateways?: number;
    gatewayEnv?: Record<string, string>;
    /** Settings of one service, by its manifest name, e.g. `{ telephony: { CARRIER_SIMULATOR_SPEEDUP: '100' } }`. */
    serviceEnv?: Record<string, Record<string, string>>;
    /** How many processes of a service to run behind its one address, e.g. `{ leads: 2 }` (default 1). */
    replicas?: Record<string, number>;
    /** Services of the manifest not to start (a suite that needs one absent, e.g. no dialler). */
    without?: string[];
    /** e.g. `--cpu-prof` (not allowed in NODE_OPTIONS) */ gatewayNodeArgs?: string[];
    /** Servers of the suite's own instead of the harness's (a fault test that stops its store or broker). */
    servers?: { MONGO_URL?: string; KAFKA_BROKERS?: string; OBJECT_STORE_ENDPOINT?: string };
    /** The checkout each process starts from, by manifest name (see `System.builds`). */
    builds?: Record<string, string>;
    /** Settings every process starts with, e.g. where to push OTLP metrics. */
    env?: Record<string, string>;
  } = {},
): Promise<System> {
  const serviceEnv = opts.serviceEnv ?? {};
  // Each service's own secrets (manifest `secrets`), made once per suite and kept across restarts.
  const secrets: Record<string, Record<string, string>> = {};
  const suffix = randomBytes(4).toString('hex');
  const ports: Record<string, number> = {};
  const replicaPorts: Record<string, number[]> = {};
  for (const s of manifest.services) {
    replicaPorts[s.name] = [];
    for (let i = 0; i < (opts.replicas?.[s.name] ?? 1); i++) replicaPorts[s.name]!.push(await freePort());
    ports[s.name] = replicaPorts[s.name]![0]!;
  }
  const addresses = addressSettings(manifest, new Map(Object.entries(ports)));
  for (const s of manifest.services) {
    if (replicaPorts[s.name]!.length > 1)
      addresses[s.addressEnv!] = `ipv4:${replicaPorts[s.name]!.map((p) => `127.0.0.1:${p}`).join(',')}`;
  }
  const procs: Proc[] = [];
  // Each process writes its store-operation counts here when asked (kit StoreOpCounter).
  const opsDir = mkdtempSync(path.join(tmpdir(), 'voiceapi-store-ops-'));
  const opsFiles = new Map<string, { proc: Proc; file: string }>();
  const opsFile = (name: string) => ({ STORE_OPS_FILE: path.join(opsDir, `${name}.json`) });
  const replicas = new Map<string, Replica[]>();
  let started = 0;
  /** Starts a process of a manifest service on `port`, with an instance id of its own. */
  const launch = async (
    name: string,
    port: number,
    extra: Record<string, string>,
    opsName: string,
  ): Promise<Replica> => {
    const s = manifest.services.find((x) => x.name === name);
    if (!s) throw new Error(`${name} is not a gRPC service of services/manifest.json`);
    secrets[name] ??= Object.fromEntries((s.secrets ?? []).map((k) => [k, randomBytes(32).toString('base64url')]));
    const instanceId = extra.INSTANCE_ID ?? serviceEnv[name]?.INSTANCE_ID ?? `${name}-${suffix}-${++started}`;
    const proc = startProcess(
      name,
      entryIn(name, system.builds[name]),
      {
        // What the charts set: metrics and traces say which service sent them (Prometheus's job
        // label is then voiceapi/<service>).
        OTEL_SERVICE_NAME: name,
        OTEL_RESOURCE_ATTRIBUTES: 'service.namespace=voiceapi',
        ...addresses,
        ...system.env,
        ...secrets[name],
        MONGO_DB: `${s.mongoDb}_${suffix}`,
        [s.portEnv]: String(port),
        ...opsFile(opsName),
        ...serviceEnv[name],
        ...extra,
        INSTANCE_ID: instanceId,
      },
      [],
      system.builds[name],
    );
    procs.push(proc);
    opsFiles.set(opsName, { proc, file: opsFile(opsName).STORE_OPS_FILE });
    const replica = { proc, instanceId, port };
    replicas.set(name, [...(replicas.get(name) ?? []), replica]);
    await waitFor(name, () => tcpOpen(port), 30_000, proc);
    return replica;
  };
  const gw = manifest.gateway;
  const system: System = {
    gateways: [],
    services: {},
    ports,
    replicaPorts,
    gatewayDb: `${gw.mongoDb}_${suffix}`,
    env: { ...serverSettings(), ...opts.servers, ...opts.env },
    builds: { ...opts.builds },
    async startService(name, extra = {}, replica = 0) {
      const port = replicaPorts[name]?.[replica];
      if (port === undefined) throw new Error(`${name} has no replica ${replica}`);
      const { proc } = await launch(name, port, extra, replica === 0 ? name : `${name}-${port}`);
      if (replica === 0) system.services[name] = proc;
      return proc;
    },
    async startReplica(name, extra = {}) {
      const port = await freePort();
      return launch(name, port, extra, `${name}-${port}`);
    },
    replicasOf: (name) => replicas.get(name) ?? [],
    get companies() {
      return system.services.companies!;
    },
    get companiesPort() {
      return ports.companies!;
    },
    startCompanies: () => system.startService('companies'),
    async startGateway(extra = {}, at?: number) {
      const port = at ?? (await freePort());
      const proc = startProcess(
        gw.name,
        entryIn(gw.name, system.builds[gw.name]),
        {
          OTEL_SERVICE_NAME: gw.name,
          OTEL_RESOURCE_ATTRIBUTES: 'service.namespace=voiceapi',
          ...system.env,
          ...addresses,
          MONGO_DB: system.gatewayDb,
          [gw.portEnv]: String(port),
          ADMIN_TOKEN,
          KEY_HASH_PEPPER: PEPPER,
          INSTANCE_ID: `test-${suffix}-${port}`,
          // Every answer is checked against its documented schema; a mismatch is a loud 500.
          RESPONSE_SCHEMA_CHECK: 'true',
          ...opsFile(`gateway-${port}`),
          ...opts.gatewayEnv,
          ...extra,
        },
        opts.gatewayNodeArgs,
        system.builds[gw.name],
      );
      procs.push(proc);
      opsFiles.set(`gateway-${port}`, { proc, file: opsFile(`gateway-${port}`).STORE_OPS_FILE });
      const url = `http://127.0.0.1:${port}`;
      await waitFor('gateway', async () => (await fetch(`${url}/readyz`)).status === 200, 60_000, proc);
      const gateway = { url, proc };
      system.gateways.push(gateway);
      return gateway;
    },
    storeOps: () => readStoreOps([...opsFiles].map(([name, { proc, file }]) => ({ name, pid: proc.child.pid, file }))),
    async stop() {
      await Promise.all(procs.map((p) => p.stop()));
      rmSync(opsDir, { recursive: true, force: true });
    },
  };
  try {
    // allSettled: every start has finished (or failed) before a failure stops what did start.
    const wanted = manifest.services.filter((s) => !opts.without?.includes(s.name));
    const starts = await Promise.allSettled(
      wanted.flatMap((s) => replicaPorts[s.name]!.map((_, i) => system.startService(s.name, {}, i))),
    );
    const failed = starts.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    // eslint-disable-next-line @typescript-eslint/only-throw-error -- the failed start's own error, passed on as it was
    if (failed) throw failed.reason;
    for (let i = 0; i < (opts.gateways ?? 1); i++) await system.startGateway();
  } catch (err) {
    // The suite never gets the system to stop: stop what started, so no process outlives it.
    await system.stop();
    throw err;
  }
  return system;
}

export interface CallResult {
  status: number;
  headers: Headers;
  body: any;
}

/** A small HTTP helper: JSON in, JSON out. */
export async function call(
  url: string,
  opts: {
    method?: string;
    key?: string;
    admin?: boolean;
    body?: unknown;
    raw?: string;
    headers?: Record<string, string>;
  } = {},
): Promise<CallResult> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.key) headers.authorization = `Bearer ${opts.key}`;
  if (opts.admin) headers.authorization = `Bearer ${ADMIN_TOKEN}`;
  let payload: string | undefined = opts.raw;
  if (opts.body !== undefined) payload = JSON.stringify(opts.body);
  if (payload !== undefined && !Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) {
    headers['content-type'] = 'application/json';
  }
  const res = await fetch(url, {
    method: opts.method ?? (payload !== undefined ? 'POST' : 'GET'),
    headers,
    body: payload,
  });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    /* not JSON: keep the text */
  }
  return { status: res.status, headers: res.headers, body };
}

/** Creates a tenant and issues it a key through the operator API. */
export async function tenantWithKey(
  gw: string,
  grant: { mode?: 'live' | 'sandbox'; scopes?: string[]; rateLimitPerSecond?: number } = {},
): Promise<{ tenantId: string; key: string; keyId: string }> {
  const t = await call(`${gw}/admin/v1/tenants`, {
    admin: true,
    body: { name: `tenant-${randomBytes(3).toString('hex')}` },
  });
  if (t.status !== 201) throw new Error(`tenant: ${t.status} ${JSON.stringify(t.body)}`);
  const k = await call(`${gw}/admin/v1/tenants/${t.body.tenant.id}/api-keys`, {
    admin: true,
    body: {
      name: 'test key',
      mode: grant.mode ?? 'live',
      scopes: grant.scopes,
      rateLimitPerSecond: grant.rateLimitPerSecond,
    },
  });
  if (k.status !== 201) throw new Error(`key: ${k.status} ${JSON.stringify(k.body)}`);
  return { tenantId: t.body.tenant.id, key: k.body.key, keyId: k.body.apiKey.id };
}
