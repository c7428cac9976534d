/**
 * CPU profile of one gateway replica under `GET /api/v1/ping` load (what `make bench` measures as B).
 * Writes a .cpuprofile (open it in Chrome DevTools or speedscope) and prints the functions with the
 * most self time. Usage: node --import tsx test/bench/profile-ping.ts [seconds] [out-dir]
 */
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import autocannon from 'autocannon';
import { provideInfra } from '../harness/infra';
import { ROOT } from '../harness/processes';
import { startSystem, tenantWithKey } from '../harness/system';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

async function main(): Promise<void> {
  const seconds = Number(process.argv[2] ?? 10);
  const dir = path.resolve(process.argv[3] ?? path.join(ROOT, '.data/profiles', new Date().toISOString().replace(/[:.]/g, '-')));
  mkdirSync(dir, { recursive: true });
  const infra = await provideInfra((l) => process.stderr.write(`[infra] ${l}\n`));
  process.env.MONGO_URL = infra.mongoUrl;
  process.env.KAFKA_BROKERS = infra.kafkaBrokers;
  const sys = await startSystem({
    gatewayEnv: { RATE_LIMIT_PER_SECOND: '1000000000', LOG_LEVEL: 'warn', RESPONSE_SCHEMA_CHECK: 'false' },
    gatewayNodeArgs: ['--cpu-prof', `--cpu-prof-dir=${dir}`],
  });
  try {
    const gw = sys.gateways[0]!.url;
    const { key } = await tenantWithKey(gw);
    const opts = { url: `${gw}/api/v1/ping`, headers: { authorization: `Bearer ${key}` }, connections: 16 };
    await autocannon({ ...opts, duration: 2 });
    const r = await autocannon({ ...opts, duration: seconds });
    process.stdout.write(`ping: ${r.requests.average.toFixed(0)} req/s, p99 ${r.latency.p99} ms, non-2xx ${r.non2xx}\n`);
  } finally {
    await sys.stop();
    await infra.stop();
  }
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'))) {
    const profile = JSON.parse(readFileSync(path.join(dir, file), 'utf8')) as { nodes: Node[]; samples: number[] };
    const byId = new Map(profile.nodes.map((n) => [n.id, n]));
    const self = new Map<string, number>();
    for (const id of profile.samples) {
      const f = byId.get(id)!.callFrame;
      const where = `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*node_modules\//, '').replace(ROOT, '')}:${f.lineNumber + 1}`;
      self.set(where, (self.get(where) ?? 0) + 1);
    }
    const total = profile.samples.length;
    process.stdout.write(`\n${path.join(dir, file)}: ${total} samples; top self time:\n`);
    for (const [where, n] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 40)) {
      process.stdout.write(`${((n / total) * 100).toFixed(1).padStart(5)}%  ${where}\n`);
    }
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`profile failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
