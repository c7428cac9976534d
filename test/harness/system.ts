import { randomBytes } from 'node:crypto';
import { Socket } from 'node:net';
import { freePort, startProcess, waitFor, type Proc } from './processes';

export const ADMIN_TOKEN = 'test-admin-token-0123456789';
const PEPPER = 'test-pepper-0123456789abcdef';

const tcpOpen = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = new Socket();
    s.once('connect', () => (s.destroy(), resolve(true)));
    s.once('error', () => resolve(false));
    s.connect(port, '127.0.0.1');
  });

export interface Gateway {
  url: string;
  proc: Proc;
}

export interface System {
  gateways: Gateway[];
  companies: Proc;
  companiesPort: number;
  /** The gateway replicas' MongoDB database (tests may look at what the gateway stored). */
  gatewayDb: string;
  env: Record<string, string>;
  startCompanies(): Promise<Proc>;
  startGateway(extra?: Record<string, string>): Promise<Gateway>;
  stop(): Promise<void>;
}

/**
 * Starts the real processes (companies service and gateway replicas) against the harness's
 * MongoDB and Kafka, each suite in databases of its own.
 */
export async function startSystem(
  opts: { gateways?: number; gatewayEnv?: Record<string, string>; /** e.g. `--cpu-prof` (not allowed in NODE_OPTIONS) */ gatewayNodeArgs?: string[] } = {},
): Promise<System> {
  const suffix = randomBytes(4).toString('hex');
  const env: Record<string, string> = {
    MONGO_URL: process.env.MONGO_URL!,
    KAFKA_BROKERS: process.env.KAFKA_BROKERS!,
  };
  const companiesPort = await freePort();
  const procs: Proc[] = [];
  const system: System = {
    gateways: [],
    companies: undefined as unknown as Proc,
    companiesPort,
    gatewayDb: `gateway_${suffix}`,
    env,
    async startCompanies() {
      const proc = startProcess('companies', 'services/companies/dist/main.js', {
        ...system.env,
        MONGO_DB: `companies_${suffix}`,
        GRPC_PORT: String(companiesPort),
      });
      procs.push(proc);
      await waitFor('companies', () => tcpOpen(companiesPort), 30_000, proc);
      system.companies = proc;
      return proc;
    },
    async startGateway(extra = {}) {
      const port = await freePort();
      const proc = startProcess('gateway', 'gateway/dist/main.js', {
        ...env,
        MONGO_DB: system.gatewayDb,
        PORT: String(port),
        ADMIN_TOKEN,
        KEY_HASH_PEPPER: PEPPER,
        COMPANIES_GRPC_ADDR: `127.0.0.1:${companiesPort}`,
        INSTANCE_ID: `test-${suffix}-${port}`,
        // Every answer is checked against its documented schema; a mismatch is a loud 500.
        RESPONSE_SCHEMA_CHECK: 'true',
        ...opts.gatewayEnv,
        ...extra,
      }, opts.gatewayNodeArgs);
      procs.push(proc);
      const url = `http://127.0.0.1:${port}`;
      await waitFor('gateway', async () => (await fetch(`${url}/readyz`)).status === 200, 60_000, proc);
      const gw = { url, proc };
      system.gateways.push(gw);
      return gw;
    },
    async stop() {
      await Promise.all(procs.map((p) => p.stop()));
    },
  };
  await system.startCompanies();
  for (let i = 0; i < (opts.gateways ?? 1); i++) await system.startGateway();
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
  opts: { method?: string; key?: string; admin?: boolean; body?: unknown; raw?: string; headers?: Record<string, string> } = {},
): Promise<CallResult> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.key) headers.authorization = `Bearer ${opts.key}`;
  if (opts.admin) headers.authorization = `Bearer ${ADMIN_TOKEN}`;
  let payload: string | undefined = opts.raw;
  if (opts.body !== undefined) payload = JSON.stringify(opts.body);
  if (payload !== undefined && !Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) {
    headers['content-type'] = 'application/json';
  }
  const res = await fetch(url, { method: opts.method ?? (payload !== undefined ? 'POST' : 'GET'), headers, body: payload });
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
  const t = await call(`${gw}/admin/v1/tenants`, { admin: true, body: { name: `tenant-${randomBytes(3).toString('hex')}` } });
  if (t.status !== 201) throw new Error(`tenant: ${t.status} ${JSON.stringify(t.body)}`);
  const k = await call(`${gw}/admin/v1/tenants/${t.body.tenant.id}/api-keys`, {
    admin: true,
    body: { name: 'test key', mode: grant.mode ?? 'live', scopes: grant.scopes, rateLimitPerSecond: grant.rateLimitPerSecond },
  });
  if (k.status !== 201) throw new Error(`key: ${k.status} ${JSON.stringify(k.body)}`);
  return { tenantId: t.body.tenant.id, key: k.body.key, keyId: k.body.apiKey.id };
}
