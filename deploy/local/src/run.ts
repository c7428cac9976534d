/**
 * `make run`: the whole system on one machine, no Docker. Starts FerretDB and Kafka (or uses
 * MONGO_URL / KAFKA_BROKERS when given), the companies service and the gateway; creates a demo
 * tenant with a sandbox and a live key; prints how to call it. Ctrl-C stops everything.
 * Data (and the generated admin token, key pepper and demo keys) stay in DATA_DIR, so a restart
 * loses no tenant or key.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import { connect } from 'node:net';
import * as path from 'node:path';
import { freePorts, startLocalInfra, type LocalInfra } from './index';

const ROOT = path.resolve(__dirname, '../../..');
const env = process.env;
const DATA_DIR = path.resolve(env.DATA_DIR ?? path.join(ROOT, '.data'));
const PORT = Number(env.PORT ?? 8080);
const say = (line: string) => process.stdout.write(`[run] ${line}\n`);

/** A secret from the environment, else the one generated on an earlier run, else a new one. */
function persistentSecret(name: string, file: string): string {
  if (env[name]) return env[name]!;
  const p = path.join(DATA_DIR, file);
  if (fs.existsSync(p)) return fs.readFileSync(p, 'utf8').trim();
  const value = randomBytes(24).toString('base64url');
  fs.writeFileSync(p, `${value}\n`, { mode: 0o600 });
  return value;
}

interface Child {
  name: string;
  proc: ChildProcess;
  exited: Promise<number | null>;
}

function startService(name: string, entry: string, childEnv: Record<string, string>): Child {
  const logFile = path.join(DATA_DIR, 'logs', `${name}.log`);
  const out = fs.openSync(logFile, 'a');
  const proc = spawn(process.execPath, ['--require', '@voiceapi/kit/telemetry', path.join(ROOT, entry)], {
    cwd: ROOT,
    env: { ...env, ...childEnv },
    stdio: ['ignore', out, out],
  });
  fs.closeSync(out);
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  return { name, proc, exited };
}

async function stopChild(c: Child): Promise<void> {
  if (c.proc.exitCode !== null || c.proc.signalCode !== null) return;
  c.proc.kill('SIGTERM');
  const timer = setTimeout(() => c.proc.kill('SIGKILL'), 15_000);
  await c.exited;
  clearTimeout(timer);
}

/** Resolves once something accepts TCP connections on the port (the gRPC server binds last). */
async function waitListening(port: number, child: Child, timeoutMs = 60_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (child.proc.exitCode !== null) throw new Error(`${child.name} exited; see ${path.join(DATA_DIR, 'logs', `${child.name}.log`)}`);
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${child.name} not listening within ${timeoutMs / 1000} s`);
}

async function waitReady(url: string, child: Child, timeoutMs = 60_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (child.proc.exitCode !== null) throw new Error(`${child.name} exited; see ${path.join(DATA_DIR, 'logs', `${child.name}.log`)}`);
    try {
      if ((await fetch(url)).status === 200) return;
    } catch {
      /* not listening yet */
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${child.name} not ready within ${timeoutMs / 1000} s`);
}

interface Demo {
  tenantId: string;
  sandboxKey: string;
  liveKey: string;
}

const DEMO_SCOPES = [
  'calls:read', 'credits:read', 'webhooks:write', 'leads:read', 'leads:write', 'inbound:read', 'inbound:write',
  'companies:read', 'companies:write', 'knowledge:read', 'knowledge:write', 'analytics:read', 'recordings:read',
];

/** The demo tenant and keys from an earlier run when they still work; otherwise new ones. */
async function demoTenant(base: string, adminToken: string): Promise<Demo> {
  const file = path.join(DATA_DIR, 'demo.json');
  if (fs.existsSync(file)) {
    const saved = JSON.parse(fs.readFileSync(file, 'utf8')) as Demo;
    const ok = await Promise.all(
      [saved.sandboxKey, saved.liveKey].map(async (k) => (await fetch(`${base}/api/v1/ping`, { headers: { authorization: `Bearer ${k}` } })).status === 200),
    );
    if (ok.every(Boolean)) return saved;
    say('saved demo keys no longer work; issuing new ones');
  }
  const admin = async (p: string, body: unknown) => {
    const res = await fetch(`${base}/admin/v1${p}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (res.status !== 201) throw new Error(`POST ${p}: ${res.status} ${await res.text()}`);
    return (await res.json()) as Record<string, any>;
  };
  const { tenant } = await admin('/tenants', { name: 'Demo Clinic' });
  const sandbox = await admin(`/tenants/${tenant.id}/api-keys`, { name: 'demo sandbox', mode: 'sandbox', scopes: DEMO_SCOPES, purpose: 'make run demo' });
  const live = await admin(`/tenants/${tenant.id}/api-keys`, { name: 'demo live', mode: 'live', scopes: DEMO_SCOPES, purpose: 'make run demo' });
  const demo = { tenantId: tenant.id as string, sandboxKey: sandbox.key as string, liveKey: live.key as string };
  fs.writeFileSync(file, JSON.stringify(demo, null, 2), { mode: 0o600 });
  return demo;
}

async function main(): Promise<void> {
  fs.mkdirSync(path.join(DATA_DIR, 'logs'), { recursive: true });
  const adminToken = persistentSecret('ADMIN_TOKEN', 'admin-token');
  const pepper = persistentSecret('KEY_HASH_PEPPER', 'key-hash-pepper');

  let infra: LocalInfra | undefined;
  let mongoUrl = env.MONGO_URL;
  let kafkaBrokers = env.KAFKA_BROKERS;
  const children: Child[] = [];
  let stopping = false;
  const stopAll = async (code: number) => {
    if (stopping) return;
    stopping = true;
    say('stopping…');
    for (const c of [...children].reverse()) await stopChild(c);
    await infra?.stop();
    say('stopped');
    process.exit(code);
  };
  process.on('SIGINT', () => void stopAll(0));
  process.on('SIGTERM', () => void stopAll(0));

  if (!mongoUrl || !kafkaBrokers) {
    say(`starting FerretDB and Kafka (data in ${path.join(DATA_DIR, 'infra')})…`);
    infra = await startLocalInfra({ dataDir: path.join(DATA_DIR, 'infra'), log: () => undefined });
    mongoUrl = infra.mongoUrl;
    kafkaBrokers = infra.kafkaBrokers.join(',');
    void infra.exited.then((why) => {
      if (!stopping) {
        say(`infrastructure stopped unexpectedly: ${why}`);
        void stopAll(1);
      }
    });
  }
  const [companiesPort] = env.COMPANIES_GRPC_PORT ? [Number(env.COMPANIES_GRPC_PORT)] : await freePorts(1);
  const shared = { MONGO_URL: mongoUrl, KAFKA_BROKERS: kafkaBrokers, LOG_LEVEL: env.LOG_LEVEL ?? 'info' };

  say('starting companies service…');
  const companies = startService('companies', 'services/companies/dist/main.js', { ...shared, GRPC_PORT: String(companiesPort) });
  children.push(companies);
  await waitListening(companiesPort!, companies);

  say('starting gateway…');
  const gateway = startService('gateway', 'gateway/dist/main.js', {
    ...shared,
    PORT: String(PORT),
    ADMIN_TOKEN: adminToken,
    KEY_HASH_PEPPER: pepper,
    COMPANIES_GRPC_ADDR: `127.0.0.1:${companiesPort}`,
  });
  children.push(gateway);
  const base = `http://127.0.0.1:${PORT}`;
  await waitReady(`${base}/readyz`, gateway);
  for (const c of children) {
    void c.exited.then((code) => {
      if (!stopping) {
        say(`${c.name} exited (${code}); see ${path.join(DATA_DIR, 'logs', `${c.name}.log`)}`);
        void stopAll(1);
      }
    });
  }

  const demo = await demoTenant(base, adminToken);
  process.stdout.write(`
  Tenant API     ${base}/api/v1        (reference: ${base}/docs)
  Operator API   ${base}/admin/v1
  Admin token    ${adminToken}
  Demo tenant    ${demo.tenantId}
  Sandbox key    ${demo.sandboxKey}
  Live key       ${demo.liveKey}
  Logs           ${path.join(DATA_DIR, 'logs')}

  Try:
    curl -s ${base}/api/v1/ping -H "Authorization: Bearer ${demo.sandboxKey}"
    curl -s ${base}/api/v1/companies -H "X-API-Key: ${demo.liveKey}" -H "Content-Type: application/json" -d '{"name":"Sunrise Clinic","timezone":"America/New_York"}'

  Ctrl-C stops everything; data stays in ${DATA_DIR}.
`);
}

main().catch((err: unknown) => {
  process.stderr.write(`[run] failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
