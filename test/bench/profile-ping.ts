/**
 * CPU profile of one gateway replica under `GET /api/v1/ping` load (what `make bench` measures as B).
 * Writes a .cpuprofile (open it in Chrome DevTools or speedscope) and prints the functions with the
 * most self time. Usage: node --import tsx test/bench/profile-ping.ts [seconds] [out-dir]
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import autocannon from 'autocannon';
import { provideInfra, useInfra } from '../harness/infra';
import { ROOT } from '../harness/processes';
import { startSystem, tenantWithKey } from '../harness/system';
import { summarizeProfiles } from './profiles';

async function main(): Promise<void> {
  const seconds = Number(process.argv[2] ?? 10);
  const dir = path.resolve(
    process.argv[3] ?? path.join(ROOT, '.data/profiles', new Date().toISOString().replace(/[:.]/g, '-')),
  );
  mkdirSync(dir, { recursive: true });
  const infra = await provideInfra((l) => process.stderr.write(`[infra] ${l}\n`));
  useInfra(infra);
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
    process.stdout.write(
      `ping: ${r.requests.average.toFixed(0)} req/s, p99 ${r.latency.p99} ms, non-2xx ${r.non2xx}\n`,
    );
  } finally {
    await sys.stop();
    await infra.stop();
  }
  process.stdout.write(summarizeProfiles(dir));
}

main().catch((err: unknown) => {
  process.stderr.write(`profile failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
