// Over 300 lines because it starts every process of `make run` in the order they depend on and prints how to call them; one script a user can read top to bottom.
/**
 * `make run`: the whole system on one machine, no Docker. Starts the store, Kafka and the object
 * store (or uses MONGO_URL / KAFKA_BROKERS / OBJECT_STORE_ENDPOINT when given), every process of services/manifest.json (the gRPC
 * services, then the gateway); creates a demo tenant with a sandbox and a live key; prints how to
 * call it. Like an orchestrator, it restarts any process that exits on its own (backoff 0.5 s
 * doubling to 30 s) while the others keep serving. Ctrl-C or SIGTERM stops everything.
 * Data (and the generated admin token, key pepper and demo keys) stay in DATA_DIR, so a restart
 * loses no tenant or key.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import {
  addressSettings,
  ensureInstalled,
  freePorts,
  infraDirs,
  loadManifest,
  LOCAL_SESSION_TIMEOUT_MS,
  objectStoreEnv,
  processNodeOptions,
  spawnProcess,
  startAlertmanager,
  startObjectStore,
  startPrometheus,
  startStore,
  storeUrl,
  startKafka,
  supervise,
  tcpOpen,
  waitReady,
  type LogFn,
  type ObjectStoreHandle,
  type ProcessEntry,
  type Supervisor,
} from './index';

const ROOT = path.resolve(__dirname, '../../..');
const env = process.env;
const DATA_DIR = path.resolve(env.DATA_DIR ?? path.join(ROOT, '.data'));
const LOGS = path.join(DATA_DIR, 'logs');
const PORT = Number(env.PORT ?? 8080);
const START_TIMEOUT_MS = 60_000;
const say = (line: string) => process.stdout.write(`[run] ${line}\n`);

/** A secret from the environment, else the one generated on an earlier run, else a new one. */
function persistentSecret(name: string, file: string): string {
  if (env[name]) return env[name];
  const p = path.join(DATA_DIR, file);
  if (fs.existsSync(p)) return fs.readFileSync(p, 'utf8').trim();
  const value = randomBytes(24).toString('base64url');
  fs.writeFileSync(p, `${value}\n`, { mode: 0o600 });
  return value;
}

/** Server output into logs/<name>.log (the console stays for the launcher's own lines). */
function fileLog(name: string): LogFn {
  const stream = fs.createWriteStream(path.join(LOGS, `${name}.log`), { flags: 'a' });
  return (line) => void stream.write(`${line}\n`);
}

/** The MongoDB-compatible store under supervision; a restart reuses its port and data directory. */
function superviseStore(dataDir: string): { sup: Supervisor; url: () => string } {
  let port: number | undefined;
  const log = fileLog('store');
  const sup = supervise({
    name: 'store',
    say,
    start: async ({ first, signal }) => {
      const h = await startStore({ dataDir, port, log, signal });
      port = h.port;
      say(`store ${first ? 'started' : 'restarted'} (pid ${h.pid}, ${h.url})`);
      return h;
    },
  });
  return { sup, url: () => storeUrl(port!) };
}

/**
 * OBSERVE=1: Alertmanager under supervision, with the configuration the chart ships, posting pages
 * and tickets to ALERTS_WEBHOOK_URL and the Watchdog to ALERTS_WATCHDOG_URL (either unset: kept in
 * Alertmanager, sent nowhere); SLO_WINDOW_SCALE divides its waits and repeats as it does the windows.
 * The SLO page, served by Prometheus on `prometheusPort`, may read its API from the browser (CORS).
 */
function superviseAlertmanager(
  dataDir: string,
  prometheusPort: number,
): { sup: Supervisor; url: () => string; target: () => string } {
  let port = env.ALERTMANAGER_PORT ? Number(env.ALERTMANAGER_PORT) : undefined;
  const log = fileLog('alertmanager');
  let h: { url: string; target: string } | undefined;
  const sup = supervise({
    name: 'alertmanager',
    say,
    start: async ({ first, signal }) => {
      const started = await startAlertmanager({
        dataDir,
        port,
        webhookUrl: env.ALERTS_WEBHOOK_URL || undefined,
        watchdogUrl: env.ALERTS_WATCHDOG_URL || undefined,
        timeScale: Number(env.SLO_WINDOW_SCALE ?? 1),
        corsOrigins: [`http://127.0.0.1:${prometheusPort}`, `http://localhost:${prometheusPort}`],
        log,
        signal,
      });
      port = started.port;
      h = started;
      say(
        `alertmanager ${first ? 'started' : 'restarted'} (pid ${started.pid}, ${started.url}, pages and tickets to ${env.ALERTS_WEBHOOK_URL || 'no receiver: set ALERTS_WEBHOOK_URL'})`,
      );
      return started;
    },
  });
  return { sup, url: () => h!.url, target: () => h!.target };
}

/**
 * OBSERVE=1: Prometheus under supervision, evaluating the platform's rules as the umbrella chart
 * ships them (SLO_WINDOW_SCALE=N divides every SLO window by N, to watch a burn in minutes), taking
 * every process's OTLP metrics and sending its alerts to `alertmanager`; serves the SLO page at
 * /user/index.html.
 */
function supervisePrometheus(
  dataDir: string,
  alertmanager: string,
  port: number,
): { sup: Supervisor; url: () => string; otlp: () => string } {
  const scale = Number(env.SLO_WINDOW_SCALE ?? 1);
  const shipped = path.join(ROOT, 'charts/platform/files/prometheus');
  const rulesDir = scale === 1 ? shipped : path.join(dataDir, `rules-scaled-${scale}`);
  if (scale !== 1) {
    // The same generator the tests use (Sloth, tools/observability.ts), windows divided.
    execFileSync(
      process.execPath,
      ['--import', 'tsx', path.join(ROOT, 'tools/observability.ts'), 'write', rulesDir, String(scale)],
      { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] },
    );
  }
  const ruleFiles = fs
    .readdirSync(rulesDir)
    .filter((f) => f.endsWith('.rules.yaml'))
    .map((f) => path.join(rulesDir, f));
  const log = fileLog('prometheus');
  let h: { url: string; otlpMetricsUrl: string } | undefined;
  const sup = supervise({
    name: 'prometheus',
    say,
    start: async ({ first, signal }) => {
      const started = await startPrometheus({
        dataDir,
        port,
        ruleFiles,
        alertmanagers: [alertmanager],
        userAssets: path.join(ROOT, 'observability/page'),
        evaluationIntervalS: scale === 1 ? 15 : 1,
        // Scaled: a firing alert sent before Alertmanager was known goes again within seconds, not a minute.
        ...(scale !== 1 && { alertResendDelayS: 5 }),
        log,
        signal,
      });
      h = started;
      say(
        `prometheus ${first ? 'started' : 'restarted'} (pid ${started.pid}, ${started.url}, ${ruleFiles.length} rule files${scale === 1 ? '' : `, SLO windows ÷ ${scale}`})`,
      );
      return started;
    },
  });
  return { sup, url: () => h!.url, otlp: () => h!.otlpMetricsUrl };
}

/** Kafka under supervision; a restart reuses its ports and data directory. */
/** The object store (versitygw) under supervision: its objects stay under .data/ across restarts, on the same port. */
function superviseObjectStore(dataDir: string): { sup: Supervisor; env: () => Record<string, string> } {
  let handle: ObjectStoreHandle | undefined;
  const log = fileLog('objects');
  const sup = supervise({
    name: 'objects',
    say,
    start: async ({ first, signal }) => {
      const h = await startObjectStore({ dataDir, port: handle?.port, log, signal });
      handle = h;
      say(`object store ${first ? 'started' : 'restarted'} (pid ${h.pid}, ${h.endpoint})`);
      return h;
    },
  });
  return { sup, env: () => objectStoreEnv(handle!) };
}

function superviseKafka(dataDir: string): { sup: Supervisor; brokers: () => string } {
  let port: number | undefined;
  let controllerPort: number | undefined;
  const log = fileLog('kafka');
  const sup = supervise({
    name: 'kafka',
    say,
    start: async ({ first, signal }) => {
      const h = await startKafka({ dataDir, port, controllerPort, log, signal });
      ({ port, controllerPort } = h);
      say(`kafka ${first ? 'started' : 'restarted'} (pid ${h.pid}, ${h.brokers.join(',')})`);
      return h;
    },
  });
  return { sup, brokers: () => `127.0.0.1:${port}` };
}

/**
 * One manifest process under supervision. The first start waits until `ready` (so the gateway
 * starts once its backends listen, and the banner comes once everything answers); a restart
 * counts as up once spawned, so a slow start is never killed for being slow.
 */
function superviseProcess(
  p: ProcessEntry,
  childEnv: Record<string, string>,
  where: string,
  ready: () => Promise<boolean>,
): Supervisor {
  const logFile = path.join(LOGS, `${p.name}.log`);
  return supervise({
    name: p.name,
    say,
    start: async ({ first, signal }) => {
      const proc = spawnProcess(
        p.name,
        process.execPath,
        ['--require', '@voiceapi/kit/telemetry', path.join(ROOT, p.entry)],
        {
          cwd: ROOT,
          env: { ...env, NODE_OPTIONS: processNodeOptions(env), ...childEnv },
          logFile,
          stopTimeoutMs: 15_000,
        },
      );
      say(`${p.name} ${first ? 'started' : 'restarted'} (pid ${proc.pid}, ${where})`);
      if (first) await waitReady(proc, where, START_TIMEOUT_MS, ready, signal);
      return proc;
    },
  });
}

interface Demo {
  tenantId: string;
  sandboxKey: string;
  liveKey: string;
}

const DEMO_SCOPES = [
  'calls:read',
  'credits:read',
  'webhooks:write',
  'leads:read',
  'leads:write',
  'inbound:read',
  'inbound:write',
  'companies:read',
  'companies:write',
  'knowledge:read',
  'knowledge:write',
  'analytics:read',
  'recordings:read',
];

/** The demo tenant and keys from an earlier run when they still work; otherwise new ones. */
async function demoTenant(base: string, adminToken: string): Promise<Demo> {
  const file = path.join(DATA_DIR, 'demo.json');
  if (fs.existsSync(file)) {
    const saved = JSON.parse(fs.readFileSync(file, 'utf8')) as Demo;
    const ok = await Promise.all(
      [saved.sandboxKey, saved.liveKey].map(
        async (k) => (await fetch(`${base}/api/v1/ping`, { headers: { authorization: `Bearer ${k}` } })).status === 200,
      ),
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
    return (await res.json()) as { tenant: { id: string }; key: string }; // the two answers used: a tenant's, an API key's
  };
  const { tenant } = await admin('/tenants', { name: 'Demo Clinic' });
  const sandbox = await admin(`/tenants/${tenant.id}/api-keys`, {
    name: 'demo sandbox',
    mode: 'sandbox',
    scopes: DEMO_SCOPES,
    purpose: 'make run demo',
  });
  const live = await admin(`/tenants/${tenant.id}/api-keys`, {
    name: 'demo live',
    mode: 'live',
    scopes: DEMO_SCOPES,
    purpose: 'make run demo',
  });
  const demo = { tenantId: tenant.id, sandboxKey: sandbox.key, liveKey: live.key };
  fs.writeFileSync(file, JSON.stringify(demo, null, 2), { mode: 0o600 });
  return demo;
}

/** `<NAME>_GRPC_PORT` pins a service's port (e.g. COMPANIES_GRPC_PORT); otherwise a free one. */
async function servicePorts(services: readonly ProcessEntry[]): Promise<Map<string, number>> {
  const free = await freePorts(services.length);
  return new Map(
    services.map((s, i) => {
      const pinned = env[`${s.name.toUpperCase().replace(/-/g, '_')}_GRPC_PORT`];
      return [s.name, pinned ? Number(pinned) : free[i]!];
    }),
  );
}

// Stopped in reverse: the gateway first, then the services, then the servers they use.
const tiers: Supervisor[][] = [];
let stopping = false;

async function stopAll(code: number): Promise<never> {
  if (!stopping) {
    stopping = true;
    say('stopping…');
    // From here an exit is final, not a crash to restart from.
    for (const s of tiers.flat()) s.noMoreRestarts();
    for (const tier of [...tiers].reverse()) await Promise.all(tier.map((s) => s.stop()));
    say('stopped');
  }
  process.exit(code);
}

function onSignal(signal: NodeJS.Signals): void {
  if (stopping) {
    say(`${signal} again: killing everything`);
    process.exit(130); // the exit hook SIGKILLs every child
  }
  void stopAll(0);
}

/**
 * MONGO_URL / KAFKA_BROKERS / OBJECT_STORE_ENDPOINT (with its OBJECT_STORE_* keys) from the
 * environment, else local servers started under supervision.
 */
async function infrastructure(): Promise<{ mongoUrl: string; kafkaBrokers: string; objects: Record<string, string> }> {
  const givenObjects = Object.fromEntries(
    Object.entries(env).filter((e): e is [string, string] => e[0].startsWith('OBJECT_STORE_') && !!e[1]),
  );
  const given = { mongoUrl: env.MONGO_URL, kafkaBrokers: env.KAFKA_BROKERS, objects: env.OBJECT_STORE_ENDPOINT };
  if (given.mongoUrl && given.kafkaBrokers && given.objects)
    return { mongoUrl: given.mongoUrl, kafkaBrokers: given.kafkaBrokers, objects: givenObjects };
  await ensureInstalled();
  const dirs = infraDirs(path.join(DATA_DIR, 'infra'));
  say(
    `starting ${[!given.mongoUrl && 'the store', !given.kafkaBrokers && 'Kafka', !given.objects && 'the object store'].filter(Boolean).join(', ')} (data in ${path.join(DATA_DIR, 'infra')})…`,
  );
  const store = given.mongoUrl ? undefined : superviseStore(dirs.mongo);
  const kafka = given.kafkaBrokers ? undefined : superviseKafka(dirs.kafka);
  const objects = given.objects ? undefined : superviseObjectStore(dirs.objects);
  const infra = [store?.sup, kafka?.sup, objects?.sup].filter((s): s is Supervisor => s !== undefined);
  tiers.push(infra);
  await Promise.all(infra.map((s) => s.started));
  return {
    mongoUrl: given.mongoUrl || store!.url(),
    kafkaBrokers: given.kafkaBrokers || kafka!.brokers(),
    objects: objects ? objects.env() : givenObjects,
  };
}

async function main(): Promise<void> {
  const manifest = loadManifest();
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  fs.mkdirSync(LOGS, { recursive: true });
  const adminToken = persistentSecret('ADMIN_TOKEN', 'admin-token');
  const pepper = persistentSecret('KEY_HASH_PEPPER', 'key-hash-pepper');

  const { mongoUrl, kafkaBrokers, objects } = await infrastructure();
  const observe = env.OBSERVE === '1' || env.OBSERVE === 'true';
  // Prometheus's port is chosen first: Alertmanager, started before it, lets the SLO page it serves read its API.
  const prometheusPort = observe ? Number(env.PROMETHEUS_PORT) || (await freePorts(1))[0]! : 0;
  const alertmanager = observe ? superviseAlertmanager(path.join(DATA_DIR, 'alertmanager'), prometheusPort) : undefined;
  if (alertmanager) {
    tiers.push([alertmanager.sup]);
    await alertmanager.sup.started;
  }
  const prometheus = alertmanager
    ? supervisePrometheus(path.join(DATA_DIR, 'prometheus'), alertmanager.target(), prometheusPort)
    : undefined;
  if (prometheus) {
    tiers.push([prometheus.sup]);
    await prometheus.sup.started;
  }
  // As the charts set them: metrics and traces say which service sent them (job voiceapi/<service>).
  const telemetry = (name: string): Record<string, string> => ({
    OTEL_SERVICE_NAME: name,
    OTEL_RESOURCE_ATTRIBUTES: env.OTEL_RESOURCE_ATTRIBUTES ?? 'service.namespace=voiceapi',
    ...(prometheus && {
      OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: prometheus.otlp(),
      OTEL_METRIC_EXPORT_INTERVAL:
        env.OTEL_METRIC_EXPORT_INTERVAL ?? (Number(env.SLO_WINDOW_SCALE ?? 1) === 1 ? '5000' : '1000'),
    }),
  });
  const ports = await servicePorts(manifest.services);
  // Against the local Kafka, consumers use the short session it allows; a given Kafka keeps the services' default.
  const session: Record<string, string> = env.KAFKA_BROKERS
    ? {}
    : { KAFKA_SESSION_TIMEOUT_MS: String(LOCAL_SESSION_TIMEOUT_MS) };
  const shared = {
    MONGO_URL: mongoUrl,
    KAFKA_BROKERS: kafkaBrokers,
    ...objects,
    LOG_LEVEL: env.LOG_LEVEL ?? 'info',
    ...session,
    ...addressSettings(manifest, ports),
  };

  const services = manifest.services.map((s) => {
    const port = ports.get(s.name)!;
    const secrets = Object.fromEntries(
      (s.secrets ?? []).map((name) => [
        name,
        persistentSecret(name, `${s.name}-${name.toLowerCase().replace(/_/g, '-')}`),
      ]),
    );
    return superviseProcess(
      s,
      { ...shared, ...telemetry(s.name), ...secrets, [s.portEnv]: String(port) },
      `127.0.0.1:${port}`,
      () => tcpOpen(port),
    );
  });
  tiers.push(services);
  await Promise.all(services.map((s) => s.started));

  const base = `http://127.0.0.1:${PORT}`;
  const gw = manifest.gateway;
  const gateway = superviseProcess(
    gw,
    { ...shared, ...telemetry(gw.name), [gw.portEnv]: String(PORT), ADMIN_TOKEN: adminToken, KEY_HASH_PEPPER: pepper },
    base,
    async () => (await fetch(`${base}/readyz`)).status === 200,
  );
  tiers.push([gateway]);
  await gateway.started;

  const demo = await demoTenant(base, adminToken);
  process.stdout.write(`
  Tenant API     ${base}/api/v1        (reference: ${base}/docs)
  Operator API   ${base}/admin/v1
  Admin token    ${adminToken}
  Demo tenant    ${demo.tenantId}
  Sandbox key    ${demo.sandboxKey}
  Live key       ${demo.liveKey}
  Logs           ${LOGS}${
    prometheus
      ? `
  Prometheus     ${prometheus.url()}   (its API; rules: charts/platform/files/prometheus)
  SLO page       ${prometheus.url()}/user/
  Alertmanager   ${alertmanager!.url()}   (its API, /api/v2/alerts; pages and tickets to ${env.ALERTS_WEBHOOK_URL || 'nowhere: set ALERTS_WEBHOOK_URL'})`
      : ''
  }

  Try:
    curl -s ${base}/api/v1/ping -H "Authorization: Bearer ${demo.sandboxKey}"
    curl -s ${base}/api/v1/companies -H "X-API-Key: ${demo.liveKey}" -H "Content-Type: application/json" -d '{"name":"Sunrise Clinic","timezone":"America/New_York"}'
    curl -s ${base}/admin/v1/tenants/${demo.tenantId}/credits -H "Authorization: Bearer ${adminToken}" -H "Content-Type: application/json" -d '{"amount":500,"note":"Welcome credit"}'
    curl -s ${base}/api/v1/credits/transactions -H "X-API-Key: ${demo.liveKey}"

  Outbound (a campaign from the dashboard, then a lead with consent; see docs/guides/crm-pattern.md):
    curl -s ${base}/admin/v1/tenants/${demo.tenantId}/campaigns -H "Authorization: Bearer ${adminToken}" -H "Content-Type: application/json" -d '{"name":"Spring follow-up"}'
    curl -s -X POST ${base}/admin/v1/tenants/${demo.tenantId}/campaigns/<campaignId>/start -H "Authorization: Bearer ${adminToken}"
    curl -s ${base}/api/v1/leads -H "X-API-Key: ${demo.sandboxKey}" -H "Content-Type: application/json" -d '{"campaignId":"<campaignId>","phone":"+14155550123","channel":"call","consent":{"outboundCall":true,"capturedAt":"2026-11-20T14:03:00Z","source":"web form"}}'

  A process that exits is restarted; Ctrl-C stops everything. Data stays in ${DATA_DIR}.
`);
}

main().catch(async (err: unknown) => {
  if (stopping) return; // a start cut short by Ctrl-C
  process.stderr.write(`[run] failed: ${err instanceof Error ? err.message : String(err)}\n`);
  await stopAll(1);
});
