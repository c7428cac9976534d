/**
 * Gateway edge cost (`make bench`). Measures, in one run on this machine:
 *   A  bare Express handler                    vs  B  GET /api/v1/ping through the gateway
 *   C  Express → gRPC → static reply           vs  D  GET /api/v1/companies/{id} (gRPC + indexed read)
 * and writes the ratios to docs/performance.md. It reports; it never fails on time.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { provideInfra } from '../harness/infra';
import { freePort, ROOT } from '../harness/processes';
import { call, startSystem, tenantWithKey } from '../harness/system';

const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);

interface Result {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
}

async function measure(name: string, url: string, headers: Record<string, string> = {}): Promise<Result> {
  // Warm-up (JIT, connection pools, caches), then the measured run.
  await autocannon({ url, headers, connections: CONNECTIONS, duration: 2 });
  const r = await autocannon({ url, headers, connections: CONNECTIONS, duration: DURATION_S });
  const errors = r.errors + r.timeouts + r.non2xx;
  const out = { name, rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, errors };
  process.stdout.write(`  ${name.padEnd(44)} ${out.rps.toFixed(0).padStart(7)} req/s  p50 ${out.p50} ms  p99 ${out.p99} ms  errors ${errors}\n`);
  return out;
}

function startBaseline(mode: string, port: number, target?: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(__dirname, 'baselines.ts'), mode, String(port), ...(target ? [target] : [])], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    child.stdout!.once('data', () => setTimeout(() => resolve(child), 300));
    child.once('exit', (code) => reject(new Error(`${mode} exited ${code}`)));
  });
}

const pct = (a: number, b: number) => `${((a / b) * 100).toFixed(0)}%`;

async function main(): Promise<void> {
  const infra = await provideInfra((l) => process.stderr.write(`[infra] ${l}\n`));
  process.env.MONGO_URL = infra.mongoUrl;
  process.env.KAFKA_BROKERS = infra.kafkaBrokers;
  const children: ChildProcess[] = [];
  const sys = await startSystem({ gatewayEnv: { RATE_LIMIT_PER_SECOND: '1000000000', LOG_LEVEL: 'warn' } });
  try {
    const gw = sys.gateways[0]!.url;
    const { key } = await tenantWithKey(gw, { scopes: ['companies:read', 'companies:write'] });
    const created = await call(`${gw}/api/v1/companies`, { key, body: { name: 'Bench Clinic', timezone: 'UTC' } });
    const companyId = created.body.company.id as string;

    const [barePort, grpcPort, chainPort] = [await freePort(), await freePort(), await freePort()];
    children.push(await startBaseline('bare-http', barePort));
    children.push(await startBaseline('static-grpc', grpcPort));
    children.push(await startBaseline('http-to-grpc', chainPort, `127.0.0.1:${grpcPort}`));

    process.stdout.write(`edge benchmark: ${CONNECTIONS} connections, ${DURATION_S} s each, ${cpus().length} cores\n`);
    const auth = { authorization: `Bearer ${key}` };
    const bare = await measure('A bare Express handler', `http://127.0.0.1:${barePort}/ping`);
    const ping = await measure('B gateway GET /api/v1/ping', `${gw}/api/v1/ping`, auth);
    const chain = await measure('C Express → gRPC → static reply', `http://127.0.0.1:${chainPort}/companies/${companyId}`);
    const read = await measure('D gateway GET /api/v1/companies/{id}', `${gw}/api/v1/companies/${companyId}`, auth);

    const row = (label: string, x: Result, base: Result, target: string) =>
      `| ${label} | ${x.rps.toFixed(0)} | ${base.rps.toFixed(0)} | **${pct(x.rps, base.rps)}** | ${x.p50} / ${x.p99} | ${base.p50} / ${base.p99} | +${(x.p99 - base.p99).toFixed(0)} ms | ${target} |`;
    const table = [
      '| measured | req/s | baseline req/s | throughput ratio | p50 / p99 ms | baseline p50 / p99 ms | p99 added | target |',
      '|---|---|---|---|---|---|---|---|',
      row('B ping vs A bare Express', ping, bare, '≥ 85 %, p99 ≤ +1 ms'),
      row('D companies read vs C Express→gRPC→static', read, chain, '≥ 40 %'),
    ].join('\n');
    const errors = [bare, ping, chain, read].reduce((n, r) => n + r.errors, 0);
    const doc = `# Performance

Benchmarks measure and report; they never fail the build on time. Run them with \`make bench\`
(\`BENCH_DURATION_S\`, \`BENCH_CONNECTIONS\` tune the run). Numbers below are from the last run
on ${new Date().toISOString().slice(0, 10)}: ${cpus().length} cores (${cpus()[0]?.model ?? 'unknown CPU'}), load generator
(autocannon, ${CONNECTIONS} connections, ${DURATION_S} s after a 2 s warm-up) on the same machine,
MongoDB-compatible server: ${infra.source === 'local processes' ? 'FerretDB 1.24 (SQLite)' : infra.source}.

## Gateway edge cost

- **A** a bare Express handler returning the same JSON as ping, in its own process.
- **B** \`GET /api/v1/ping\` through the gateway: kill switch, key lookup (cached), scope, per-key
  rate limit, request id. No backend call.
- **C** a bare Express handler making one gRPC call (kit client) to a static gRPC server.
- **D** \`GET /api/v1/companies/{id}\` through the gateway: the edge checks, one gRPC hop to the
  companies service and one indexed MongoDB read.

${table}

Errors during the run (non-2xx, timeouts): ${errors}.

Reading the numbers: on 2 cores the load generator, the gateway, the service and the database
share the CPU, so absolute numbers are low and vary between runs; the ratios within one run are
what the targets are about.
`;
    writeFileSync(path.join(ROOT, 'docs/performance.md'), doc);
    process.stdout.write(`\n${table}\n\nwritten to docs/performance.md\n`);
  } finally {
    for (const c of children) c.kill('SIGTERM');
    await sys.stop();
    await infra.stop();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
