/**
 * What an idle system costs (`make bench`): every process of the manifest and one gateway on the
 * embedded store and Kafka, nothing asked of them. After a settling period, measures for
 * BENCH_IDLE_S (30) seconds the store operations per second each process sends (kit
 * StoreOpCounter) and the CPU each process uses (/proc). Every background operation shows here:
 * sweeps, relays, leases, polls. Writes its section of docs/performance.md.
 */
import { cpus } from 'node:os';
import { provideInfra, useInfra } from '../harness/infra';
import { startSystem } from '../harness/system';
import { storeOpsDelta } from '../harness/store-ops';
import { PROFILE_DIR } from '../harness/processes';
import { sleep } from '../harness/wait';
import { monotonicUs, summarizeProfiles } from './profiles';
import { cpuSeconds } from './cpu';
import { writePerformanceSection } from './report';

const IDLE_S = Number(process.env.BENCH_IDLE_S ?? 30);
const SETTLE_S = Number(process.env.BENCH_IDLE_SETTLE_S ?? 15);

async function main(): Promise<void> {
  const infra = await provideInfra((l) => process.stderr.write(`[infra] ${l}\n`));
  useInfra(infra);
  const sys = await startSystem({ gatewayEnv: { LOG_LEVEL: 'warn' } });
  let measuredFrom: number | undefined;
  try {
    await sleep(SETTLE_S * 1000);
    const procs = { ...sys.services, gateway: sys.gateways[0]!.proc };
    const cpu0 = Object.fromEntries(Object.entries(procs).map(([n, p]) => [n, cpuSeconds(p.child.pid!)]));
    const store0 = infra.storePid ? cpuSeconds(infra.storePid) : undefined;
    const kafka0 = infra.kafkaPid ? cpuSeconds(infra.kafkaPid) : undefined;
    const before = await sys.storeOps();
    measuredFrom = monotonicUs();
    await sleep(IDLE_S * 1000);
    const after = await sys.storeOps();
    const cpu = Object.fromEntries(
      Object.entries(procs).map(([n, p]) => [n, (cpuSeconds(p.child.pid!) - cpu0[n]!) / IDLE_S]),
    );
    const storeCpu = store0 === undefined ? undefined : (cpuSeconds(infra.storePid!) - store0) / IDLE_S;
    const kafkaCpu = kafka0 === undefined ? undefined : (cpuSeconds(infra.kafkaPid!) - kafka0) / IDLE_S;
    const d = storeOpsDelta(before, after);
    const perS = (n: number) => (n / IDLE_S).toFixed(1);
    const rows = Object.keys(procs)
      .map((name) => {
        const colls = Object.entries(d.byCollection)
          .filter(([k]) => k.startsWith(`${name}.`))
          .sort((a, b) => b[1] - a[1])
          .map(([k, n]) => `${k.slice(name.length + 1)} ${perS(n)}`)
          .join(', ');
        return `| ${name} | ${perS(d.byProcess[name] ?? 0)} | ${colls || '—'} | ${(cpu[name]! * 100).toFixed(1)} % |`;
      })
      .join('\n');
    const totalCpu = Object.values(cpu).reduce((a, b) => a + b, 0);
    const systemCpu = totalCpu + (storeCpu ?? 0);
    const busiest = Math.max(...Object.values(d.byProcess), 0) / IDLE_S;
    const met = (ok: boolean) => (ok ? 'yes' : 'no');
    process.stdout.write(
      `idle: ${perS(d.total)} store operations/s, ${(totalCpu * 100).toFixed(0)} % of a core (the store ${((storeCpu ?? 0) * 100).toFixed(1)} %, Kafka ${((kafkaCpu ?? 0) * 100).toFixed(1)} %)\n`,
    );
    writePerformanceSection(
      'idle',
      `
## An idle system

\`node --import tsx test/bench/idle.ts\` (part of \`make bench\`), ${new Date().toISOString().slice(0, 10)}, ${cpus().length} cores: every process of the
manifest and one gateway on the embedded store and Kafka, nothing asked of them; after ${SETTLE_S} s of settling,
${IDLE_S} s measured. Store operations per second by process and collection (kit \`StoreOpCounter\`), and each
process's CPU (user + system, from /proc; 100 % is one core).

**In all: ${perS(d.total)} store operations per second; the services and the gateway use ${(totalCpu * 100).toFixed(1)} % of a core${storeCpu === undefined ? '' : `, the store answering them ${(storeCpu * 100).toFixed(1)} %`}${kafkaCpu === undefined ? '' : `, Kafka (a JVM broker with its own housekeeping) ${(kafkaCpu * 100).toFixed(1)} %`}.**

| target | measured | met |
|---|---|---|
| every process and the store, nothing asked: < 5 % of one core | ${(systemCpu * 100).toFixed(1)} % (Kafka's broker besides: ${kafkaCpu === undefined ? 'not measured' : `${(kafkaCpu * 100).toFixed(1)} %`}) | ${met(systemCpu < 0.05)} |
| store operations per second of the busiest idle process: ≤ 1 | ${busiest.toFixed(2)} | ${met(busiest <= 1)} |

| process | store operations/s | by collection | CPU |
|---|---|---|---|
${rows}
`,
    );
  } finally {
    await sys.stop();
    await infra.stop();
  }
  if (process.env.BENCH_PROFILE) process.stdout.write(summarizeProfiles(PROFILE_DIR, 25, measuredFrom));
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  },
);
