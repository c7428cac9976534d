/**
 * Batch lead ingest (`make bench`, issue 32), on the whole system as `make run` starts it (every
 * service, telephony's dialler calling the backlog at the tenant's default line count, webhooks),
 * as a tenant meets it. Three rounds in a row on growing data, each:
 *   - single `POST /leads` as fast as it goes (autocannon, BENCH_CONNECTIONS connections);
 *   - `POST /leads/batch` of 500 leads as fast as it goes (BENCH_BATCH_CONNECTIONS connections);
 * with store operations and CPU milliseconds per accepted lead, by process, beside each. Then
 * batches of 1,000, one after another, for their latency while the system dials. It reports; it
 * never fails on time. Writes its section of docs/performance.md.
 */
import { cpus } from 'node:os';
import autocannon from 'autocannon';
import { provideInfra, useInfra } from '../harness/infra';
import { call, startSystem, tenantWithKey } from '../harness/system';
import { perOperation, storeOpsDelta } from '../harness/store-ops';
import { cpuWindow, systemPids, type CpuShares } from './cpu';
import { writePerformanceSection } from './report';

const SECONDS = Number(process.env.BENCH_BATCH_S ?? 15);
const ROUNDS = 3;
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const BATCH_CONNECTIONS = Number(process.env.BENCH_BATCH_CONNECTIONS ?? 4);
const BATCH = 500;
const LATENCY_BATCHES = Number(process.env.BENCH_BATCH_LATENCY_N ?? 20);
const SPEEDUP = '200';

const met = (ok: boolean) => (ok ? 'yes' : 'no');
const consent = { outboundCall: true, capturedAt: '2026-11-01T10:00:00Z', source: 'bench' };

interface Run {
  leads: number;
  leadsPerSecond: number;
  p99: number;
  other: Record<number, number>;
  ops: string;
  cpu: CpuShares;
}

/** CPU milliseconds per accepted lead, by process, busiest first: "the store 1.9, leads 1.2, …". */
function cpuPerLead(s: CpuShares, leads: number): string {
  const ms = (share: number) => (leads === 0 ? 0 : (share * s.seconds * 1000) / leads);
  const parts = Object.entries(s.byProcess)
    .map(([name, share]) => [name, ms(share)] as const)
    .sort((a, b) => b[1] - a[1]);
  const all = parts.reduce((n, [, x]) => n + x, 0);
  return `${all.toFixed(2)} ms in all (${parts.map(([n, x]) => `${n} ${x.toFixed(2)}`).join(', ')})`;
}

async function main(): Promise<void> {
  const infra = await provideInfra((l) => process.stderr.write(`[infra] ${l}\n`));
  useInfra(infra);
  const sys = await startSystem({
    gatewayEnv: { RATE_LIMIT_PER_SECOND: '1000000000', LOG_LEVEL: 'warn', RESPONSE_SCHEMA_CHECK: 'false' },
    serviceEnv: { telephony: { CARRIER_SIMULATOR_SPEEDUP: SPEEDUP } },
  });
  const gw = sys.gateways[0]!.url;
  try {
    const { tenantId, key } = await tenantWithKey(gw, { rateLimitPerSecond: 100_000 });
    await call(`${gw}/admin/v1/tenants/${tenantId}/credits`, { admin: true, body: { amount: 1_000_000_000 } });
    const c = await call(`${gw}/admin/v1/tenants/${tenantId}/campaigns`, {
      admin: true,
      body: { name: 'bench', callingWindow: { start: '00:00', end: '24:00' } },
    });
    const campaignId = c.body.campaign.id as string;
    await call(`${gw}/admin/v1/tenants/${tenantId}/campaigns/${campaignId}/start`, { admin: true, method: 'POST' });

    // Distinct, valid US numbers: +1 415 2000000 upwards.
    let next = 0;
    const lead = () => ({ phone: `+1415${2_000_000 + next++}`, name: 'Bench Lead', channel: 'call', consent });
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };

    /** Accepted leads per second through one path, with what it cost. */
    const measure = async (path: '/leads' | '/leads/batch', connections: number, seconds: number): Promise<Run> => {
      const ops0 = await sys.storeOps();
      const cpu = cpuWindow(systemPids(sys, infra));
      let leads = 0;
      const other: Record<number, number> = {};
      const result = await new Promise<autocannon.Result>((resolve, reject) => {
        autocannon(
          {
            url: `${gw}/api/v1${path}`,
            connections,
            duration: seconds,
            requests: [
              {
                method: 'POST',
                headers,
                setupRequest: (req: autocannon.Request) => ({
                  ...req,
                  body: JSON.stringify(
                    path === '/leads'
                      ? { campaignId, ...lead() }
                      : { campaignId, leads: Array.from({ length: BATCH }, lead) },
                  ),
                }),
                onResponse: (status: number, body: string) => {
                  if (path === '/leads' && status === 202) leads++;
                  else if (path === '/leads/batch' && status === 200)
                    leads += (JSON.parse(body) as { accepted: number }).accepted;
                  else other[status] = (other[status] ?? 0) + 1;
                },
              },
            ],
          },
          // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- autocannon's own error, passed on as it was
          (err, r) => (err ? reject(err) : resolve(r)),
        );
      });
      const shares = cpu();
      const ops = perOperation(storeOpsDelta(ops0, await sys.storeOps()), leads, 'lead');
      return { leads, leadsPerSecond: leads / seconds, p99: result.latency.p99, other, ops, cpu: shares };
    };

    process.stdout.write('warm-up 5 s of each\n');
    await measure('/leads', CONNECTIONS, 5);
    await measure('/leads/batch', BATCH_CONNECTIONS, 5);
    const rounds: { single: Run; batch: Run }[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const single = await measure('/leads', CONNECTIONS, SECONDS);
      const batch = await measure('/leads/batch', BATCH_CONNECTIONS, SECONDS);
      rounds.push({ single, batch });
      process.stdout.write(
        `round ${round}: single ${single.leadsPerSecond.toFixed(0)} leads/s (p99 ${single.p99} ms), batches of ${BATCH} ${batch.leadsPerSecond.toFixed(0)} leads/s (p99 ${batch.p99} ms), ratio ${(batch.leadsPerSecond / single.leadsPerSecond).toFixed(1)}\n` +
          `  single: ${single.ops}; CPU per lead ${cpuPerLead(single.cpu, single.leads)}\n  batch: ${batch.ops}; CPU per lead ${cpuPerLead(batch.cpu, batch.leads)}\n`,
      );
    }

    // Batches of 1,000, one after another, while the dialler works through the backlog.
    const latencies: number[] = [];
    let refusedInLatency = 0;
    for (let i = 0; i < LATENCY_BATCHES; i++) {
      const t0 = performance.now();
      const res = await call(`${gw}/api/v1/leads/batch`, {
        key,
        body: { campaignId, leads: Array.from({ length: 1_000 }, lead) },
      });
      latencies.push(performance.now() - t0);
      if (res.status !== 200) refusedInLatency++;
      else refusedInLatency += res.body.refused as number;
    }
    const sorted = [...latencies].sort((a, b) => a - b);
    const pct = (p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
    const calls = await call(`${gw}/api/v1/calls?limit=1`, { key });
    process.stdout.write(
      `batches of 1,000: p50 ${pct(50).toFixed(0)} ms, p99 ${pct(99).toFixed(0)} ms; calls placed so far ${calls.body.pagination?.total}\n`,
    );

    const ratio = (r: { single: Run; batch: Run }) => r.batch.leadsPerSecond / r.single.leadsPerSecond;
    const first = rounds[0]!;
    const last = rounds[ROUNDS - 1]!;
    const md = `## Batch lead ingest (issue 32)

One run of \`make bench\` (\`test/bench/batch.ts\`) on this machine (${cpus().length} cores), on the whole system as \`make run\` starts it:
the gateway, every service (telephony dialling the backlog at the tenant's default line count, the carrier simulator at ${SPEEDUP}× speed),
the embedded store, Kafka and the load generator (autocannon). Live call leads with consent, distinct valid numbers, a campaign open
all day, a funded wallet. Each round: single \`POST /leads\` (${CONNECTIONS} connections) for ${SECONDS} s, then \`POST /leads/batch\` of ${BATCH}
(${BATCH_CONNECTIONS} connections) for ${SECONDS} s; ${ROUNDS} rounds in a row on the growing data.

| measurement | result | target | met |
|---|---|---|---|
| leads/s through batches of ${BATCH} ÷ leads/s through single \`POST /leads\`, round 1 | **${ratio(first).toFixed(1)}** (${first.batch.leadsPerSecond.toFixed(0)} ÷ ${first.single.leadsPerSecond.toFixed(0)}) | ≥ 10 | ${met(ratio(first) >= 10)} |
| batch leads/s, rounds 1 → ${ROUNDS}; last ÷ first | ${rounds.map((r) => r.batch.leadsPerSecond.toFixed(0)).join(' → ')}; **${(last.batch.leadsPerSecond / first.batch.leadsPerSecond).toFixed(2)}** | ≥ 0.9 | ${met(last.batch.leadsPerSecond / first.batch.leadsPerSecond >= 0.9)} |
| a batch of 1,000 answered while the system dials, ${LATENCY_BATCHES} one after another | p50 ${pct(50).toFixed(0)} ms, p99 **${pct(99).toFixed(0)} ms** (${refusedInLatency} leads refused) | p99 < 2 s | ${met(pct(99) < 2_000 && refusedInLatency === 0)} |

| round | single \`POST /leads\` | store operations per lead | CPU per lead, by process | batches of ${BATCH} | store operations per lead | CPU per lead, by process |
|---|---|---|---|---|---|---|
${rounds
  .map(
    (r, i) =>
      `| ${i + 1} | ${r.single.leadsPerSecond.toFixed(0)}/s (p99 ${r.single.p99} ms${Object.keys(r.single.other).length ? `, other ${JSON.stringify(r.single.other)}` : ''}) | ${r.single.ops.split(' ')[0]} | ${cpuPerLead(r.single.cpu, r.single.leads)} | ${r.batch.leadsPerSecond.toFixed(0)}/s (p99 ${r.batch.p99} ms${Object.keys(r.batch.other).length ? `, other ${JSON.stringify(r.batch.other)}` : ''}) | ${r.batch.ops.split(' ')[0]} | ${cpuPerLead(r.batch.cpu, r.batch.leads)} |`,
  )
  .join('\n')}

Store operations in detail, round 1: single ${first.single.ops}; batch ${first.batch.ops}. A batch's leads are decided together in
the leads service (\`IngestLeadBatch\`): one read of the campaign, one of each do-not-call list for all the numbers, one credit
question, then one group write of the contacts, their dial events in the outbox and their release; single leads arriving
together share those reads and writes too (the kit's coalescing), but each still pays a whole HTTP request, key check and gRPC call.`;
    writePerformanceSection('batch', md);
    process.stdout.write('docs/performance.md updated (batch section)\n');
  } finally {
    await sys.stop();
    await infra.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
