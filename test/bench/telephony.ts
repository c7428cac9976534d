// Over 300 lines because one benchmark scenario from start to report; its steps share one started system.
/**
 * Telephony (`make bench`), one run on this machine with every process on it:
 *   (a) `GET /api/v1/calls?limit=25` for one tenant among ten, at three growing sizes of its feed
 *       (10,000, 100,000 and 1,000,000 calls), unfiltered, by campaign and by a date range, through
 *       the gateway and the same query on the bare driver, the ratio between the sizes, and the
 *       store operations per page;
 *   (b) calls end to end: live call leads ingested at once, placed at full simulator speed-up on
 *       the tenant's lines, ended, charged and announced to its webhook endpoint; calls per second,
 *       end of call → \`call.outbound.billed\` received, and the store operations per call.
 * Writes its section of docs/performance.md. It reports; it never fails on time.
 */
import { randomBytes } from 'node:crypto';
import { cpus } from 'node:os';
import mongoose from 'mongoose';
import { createPromiseClient, type CallContext } from '@voiceapi/kit/grpc';
import { voiceapi } from '@voiceapi/proto';
import { Receiver } from '../../services/webhooks/test/receiver';
import { provideInfra, useInfra } from '../harness/infra';
import { call, startSystem, tenantWithKey } from '../harness/system';
import { perOperation, storeOpsDelta } from '../harness/store-ops';
import { cpuLine, cpuWindow, systemPids } from './cpu';
import { writePerformanceSection } from './report';

const SIZES = (process.env.BENCH_CALLS_SIZES ?? '10000,100000,1000000').split(',').map(Number);
const OTHER_TENANTS = 9;
const OTHERS_EACH = Number(process.env.BENCH_CALLS_OTHERS ?? 1_000);
const LOAD_S = Number(process.env.BENCH_CALLS_S ?? 10);
const MIN_SAMPLES = 5;
const DIALS = Number(process.env.BENCH_DIALS ?? 300);
const LINES = Number(process.env.BENCH_LINES ?? 100);
const met = (ok: boolean) => (ok ? 'yes' : 'no');
const DAY = 86_400_000;

interface Latency {
  p50: number;
  p99: number;
  rps: number;
  non200: number;
  n: number;
}

const percentile = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};

async function main(): Promise<void> {
  const infra = await provideInfra((l) => process.stderr.write(`[infra] ${l}\n`));
  useInfra(infra);
  const receiver = await new Receiver().start();
  const sys = await startSystem({
    // The embedded store sorts in memory (decision 0110): a page over 1,000,000 calls may take
    // longer than the default 5 s deadline; the bench measures it rather than the timeout.
    gatewayEnv: {
      RATE_LIMIT_PER_SECOND: '1000000000',
      LOG_LEVEL: 'warn',
      RESPONSE_SCHEMA_CHECK: 'false',
      GRPC_DEADLINE_MS: '120000',
    },
    serviceEnv: {
      telephony: { CARRIER_SIMULATOR_SPEEDUP: '100000', LOG_LEVEL: 'warn', DISPATCH_INTERVAL_MS: '20' },
      leads: { CALLING_WINDOW_DEFAULT: 'always', LOG_LEVEL: 'warn' },
      webhooks: { OUTBOUND_ALLOWLIST: receiver.hostPort, LOG_LEVEL: 'warn' },
    },
  });
  const gw = sys.gateways[0]!.url;
  const suffix = sys.gatewayDb.replace(/^gateway_/, '');
  const conn = await mongoose.createConnection(infra.mongoUrl, { dbName: `telephony_${suffix}` }).asPromise();
  const calls = conn.collection('calls');
  try {
    // ---- (b) the dialler, first: on a store not yet holding the feed's 100,000s of calls ----
    // A tenant of the gateway's, so its webhook endpoint can be registered like a tenant's.
    const ctx: CallContext = { tenantId: (await tenantWithKey(gw)).tenantId, keyMode: 'live' };
    const at = (name: string) => `127.0.0.1:${sys.ports[name]}`;
    const billing = createPromiseClient(voiceapi.billing.v1.BillingServiceService, at('billing'), {
      timeoutMs: 30_000,
    });
    const leads = createPromiseClient(voiceapi.leads.v1.LeadsServiceService, at('leads'), { timeoutMs: 30_000 });
    await billing.topUp({ amount: 1_000_000, reference: 'bench' }, ctx);
    const c = await leads.createCampaign({ name: 'dialler bench', type: '', channels: [], maxCallSeconds: 120 }, ctx);
    await leads.startCampaign({ id: c.campaign!.id }, ctx);
    const limit = LINES;
    const admin = (path: string, body: unknown, method?: string) =>
      call(`${gw}/admin/v1/tenants/${ctx.tenantId}${path}`, { admin: true, body, ...(method && { method }) });
    if ((await admin('/concurrency', { maxConcurrentCalls: limit }, 'PUT')).status !== 200)
      throw new Error('could not set the concurrency package');
    const hook = await admin('/webhooks', { url: `${receiver.base}/billed`, events: ['call.outbound.billed'] });
    if (hook.status !== 201) throw new Error(`webhook registration: ${hook.status} ${JSON.stringify(hook.body)}`);
    receiver.secrets.set('/billed', [hook.body.webhook.secret]);
    process.stdout.write(`ingesting ${DIALS} call leads\n`);
    const dialOps0 = await sys.storeOps();
    const dialCpu = cpuWindow(systemPids(sys, infra));
    for (let i = 0; i < DIALS; i += 50) {
      await Promise.all(
        Array.from({ length: Math.min(50, DIALS - i) }, (_, j) =>
          leads.ingestLead(
            {
              campaignId: c.campaign!.id,
              lead: {
                phone: `+1415${2_100_000 + i + j}`,
                channels: ['call'],
                consent: { outboundCall: true, capturedAt: new Date(Date.now() - 60_000), source: 'bench' },
                templateVariables: {},
                whatsappParams: {},
              },
            },
            ctx,
          ),
        ),
      );
    }
    let most = 0;
    const deadline = Date.now() + 600_000;
    let ended = 0;
    while (Date.now() < deadline) {
      most = Math.max(most, await conn.collection('lines').countDocuments({ tenantId: ctx.tenantId }));
      ended = await calls.countDocuments({ tenantId: ctx.tenantId, endedAt: { $exists: true } });
      if (ended >= DIALS) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    const cpuShares = cpuLine(dialCpu());
    const span = await calls.find({ tenantId: ctx.tenantId }).project({ startedAt: 1, endedAt: 1 }).toArray();
    const first = Math.min(...span.map((s) => (s.startedAt as Date).getTime()));
    const last = Math.max(...span.filter((s) => s.endedAt).map((s) => (s.endedAt as Date).getTime()));
    const perSecond = ended / ((last - first) / 1000);
    const opsPerCall = perOperation(
      storeOpsDelta(dialOps0, await sys.storeOps()),
      ended,
      "call (its lead's ingest included)",
    );
    process.stdout.write(`  store operations: ${opsPerCall}\n  ${cpuShares}\n`);
    const wall = span
      .filter((s) => s.endedAt)
      .map((s) => (s.endedAt as Date).getTime() - (s.startedAt as Date).getTime());
    const perCall = percentile(wall, 50);
    process.stdout.write(
      `  ${ended}/${DIALS} calls in ${((last - first) / 1000).toFixed(1)} s: ${perSecond.toFixed(1)} calls/s; at most ${most} in progress (limit ${limit}); per call p50 ${perCall} ms wall\n`,
    );
    // Each call's end → its \`call.outbound.billed\` received by the tenant's endpoint.
    const billedBy = Date.now() + 120_000;
    while (new Set(receiver.at('/billed').map((r) => r.id)).size < ended && Date.now() < billedBy)
      await new Promise((r) => setTimeout(r, 200));
    const endOf = new Map(span.filter((s) => s.endedAt).map((s) => [String(s._id), (s.endedAt as Date).getTime()]));
    const billedLags: number[] = [];
    const billedSeen = new Set<string>();
    for (const r of receiver.at('/billed')) {
      if (billedSeen.has(r.id)) continue;
      billedSeen.add(r.id);
      const endedAtMs = endOf.get((JSON.parse(r.body) as { data: { callId: string } }).data.callId);
      if (endedAtMs !== undefined) billedLags.push(r.at - endedAtMs);
    }
    const billedP99 = billedLags.length > 0 ? percentile(billedLags, 99) : NaN;
    process.stdout.write(
      `  end → call.outbound.billed received: ${billedLags.length} of ${ended}, p50 ${percentile(billedLags, 50)} ms, p99 ${billedP99} ms\n`,
    );
    billing.close();
    leads.close();

    // ---- (a) the feed ----
    const { tenantId, key } = await tenantWithKey(gw, { scopes: ['calls:read'], rateLimitPerSecond: 100_000 });
    const campaigns = Array.from({ length: 5 }, () => randomBytes(12).toString('hex'));
    const now = Date.now();
    let seq = 0;
    const doc = (tenant: string, i: number) => {
      const startedAt = new Date(now - ((i * 7_919) % (90 * DAY)));
      const direction = i % 3 === 0 ? 'inbound' : 'outbound';
      return {
        _id: `call_bench_${seq++}`,
        tenantId: tenant,
        direction,
        status: 'completed',
        outcome: 'completed',
        ...(direction === 'outbound' && {
          campaignId: campaigns[i % campaigns.length],
          contactId: randomBytes(12).toString('hex'),
        }),
        fromNumber: '+14155550100',
        toNumber: '+14155550199',
        startedAt,
        endedAt: new Date(startedAt.getTime() + 60_000),
        durationSeconds: 60,
        maxCallSeconds: 600,
        sandbox: false,
        holdFailed: false,
        billingStatus: 'charged',
        creditsCharged: 2,
        balanceAfter: 1000,
        hasTranscript: true,
        hasAnalysis: true,
        hasRecording: true,
        summary: 'Benchmark call.',
      };
    };
    const insert = async (tenant: string, from: number, to: number) => {
      for (let i = from; i < to; i += 2_000)
        await calls.insertMany(
          Array.from({ length: Math.min(2_000, to - i) }, (_, j) => doc(tenant, i + j)) as never[],
          { ordered: false },
        );
    };
    process.stdout.write(`seeding ${OTHER_TENANTS} other tenants × ${OTHERS_EACH} calls\n`);
    for (let t = 0; t < OTHER_TENANTS; t++) await insert(`bench-other-${t}`, 0, OTHERS_EACH);

    /**
     * Latency of one caller asking again and again (the store answers one query at a time per
     * connection): at least MIN_SAMPLES answers, for up to LOAD_S seconds; throughput = answers/s.
     */
    const sampled = async (once: () => Promise<boolean>): Promise<Latency> => {
      const times: number[] = [];
      let non200 = 0;
      const until = Date.now() + LOAD_S * 1000;
      while (Date.now() < until || times.length < MIN_SAMPLES) {
        const t0 = performance.now();
        if (!(await once())) non200++;
        times.push(performance.now() - t0);
      }
      const total = times.reduce((a, b) => a + b, 0) / 1000;
      return {
        p50: Math.round(percentile(times, 50)),
        p99: Math.round(percentile(times, 99)),
        rps: times.length / total,
        non200,
        n: times.length,
      };
    };
    const load = (path: string) =>
      sampled(
        async () =>
          (await fetch(`${gw}${path}`, { headers: { authorization: `Bearer ${key}` } }).then(
            async (r) => (await r.arrayBuffer(), r.status),
          )) === 200,
      );
    const weekAgo = new Date(now - 7 * DAY).toISOString();
    const queries = [
      { name: 'unfiltered', path: '/api/v1/calls?limit=25', filter: {} as Record<string, unknown> },
      {
        name: 'by campaign',
        path: `/api/v1/calls?limit=25&campaignId=${campaigns[0]}`,
        filter: { campaignId: campaigns[0] },
      },
      {
        name: 'last 7 days',
        path: `/api/v1/calls?limit=25&startedAfter=${encodeURIComponent(weekAgo)}`,
        filter: { startedAt: { $gte: new Date(weekAgo) } },
      },
    ];
    /** The same page and capped total as the service asks for, straight from the driver. */
    const bare = (filter: Record<string, unknown>) =>
      sampled(async () => {
        const q = { tenantId, ...filter };
        const page = await calls.find(q).sort({ startedAt: -1, _id: -1 }).limit(26).toArray();
        if (page.length > 25) await calls.countDocuments(q, { limit: 10_000 });
        return true;
      });
    const results: { size: number; name: string; http: Latency; driver: Latency; ops: string }[] = [];
    let held = 0;
    for (const size of SIZES) {
      process.stdout.write(`seeding the tenant to ${size} calls\n`);
      await insert(tenantId, held, size);
      held = size;
      const check = await call(`${gw}/api/v1/calls?limit=25`, { key });
      if (check.status !== 200) throw new Error(`GET /calls answered ${check.status}: ${JSON.stringify(check.body)}`);
      for (const q of queries) {
        const ops0 = await sys.storeOps();
        const http = await load(q.path);
        const ops = perOperation(storeOpsDelta(ops0, await sys.storeOps()), http.n, 'page');
        const driver = await bare(q.filter);
        results.push({ size, name: q.name, http, driver, ops });
        process.stdout.write(
          `  ${size} ${q.name}: gateway p50 ${http.p50} ms p99 ${http.p99} ms ${http.rps.toFixed(2)}/s (non-200 ${http.non200}); driver p50 ${driver.p50} ms p99 ${driver.p99} ms\n`,
        );
      }
    }

    const row = (size: number, name: string) => results.find((r) => r.size === size && r.name === name)!;
    const [small, large] = [SIZES[0]!, SIZES[SIZES.length - 1]!];
    const table = queries
      .map((q) => {
        const cells = SIZES.map((size) => row(size, q.name)).map(
          (r) => `${r.http.p50} / ${r.http.p99} ms, ${r.http.rps.toFixed(2)}/s`,
        );
        const [s, l] = [row(small, q.name), row(large, q.name)];
        return `| ${q.name} | ${cells.join(' | ')} | **${(l.http.p50 / Math.max(1, s.http.p50)).toFixed(2)}** | ${SIZES.map((size) => row(size, q.name).driver.p50).join(' / ')} ms (**${(l.driver.p50 / Math.max(1, s.driver.p50)).toFixed(2)}**) |`;
      })
      .join('\n');
    const opsLines = queries.map((q) => `- ${q.name}, at ${large} calls: ${row(large, q.name).ops}`).join('\n');
    const md = `## Telephony (issue 10)

One run of \`make bench\` (\`test/bench/telephony.ts\`) on this machine (${cpus().length} cores), every process on it (gateway,
every service, the embedded store, Kafka). Each measurement is one caller asking again and again for ${LOAD_S} s (at least
${MIN_SAMPLES} answers). The gateway's deadline is raised to 120 s for the run, so a slow page is measured, not cut off.

**(a) \`GET /api/v1/calls?limit=25\`** for one tenant among ten (the nine others hold ${OTHERS_EACH} calls each), the tenant
holding ${SIZES.join(', then ')} calls over 90 days (the data grows between measurements). p50 / p99 and throughput through
the gateway; the ratio of p50 at ${large} to ${small}; and the same page plus its capped total (decision 0012) on the bare
driver in the same run. Non-200 answers: ${results.reduce((n, r) => n + r.http.non200, 0)}.

| query | ${SIZES.map((s) => `${s} calls`).join(' | ')} | ratio ${large} / ${small} (target ≤ 1.5) | bare driver p50, ${SIZES.join(' / ')} (ratio) |
|---|${SIZES.map(() => '---|').join('')}---|---|
${table}

${
  SIZES.includes(100_000) && SIZES.includes(10_000)
    ? `The issue's targets, through the gateway: p50 at 100000 calls ≤ 50 ms, and p50 at 100000 ÷ p50 at 10000 ≤ 1.5.

| query | p50 at 100000 | ratio 100000 / 10000 | target | met |
|---|---|---|---|---|
${queries
  .map((q) => {
    const [t, h] = [row(10_000, q.name).http.p50, row(100_000, q.name).http.p50];
    const r = h / Math.max(1, t);
    return `| ${q.name} | ${h} ms | ${r.toFixed(2)} | p50 ≤ 50 ms, ratio ≤ 1.5 | ${met(h <= 50 && r <= 1.5)} |`;
  })
  .join('\n')}
`
    : ''
}
Store operations per page (every process counted, the background of the same seconds included):
${opsLines}

The indexes \`{tenantId, startedAt: -1, _id: -1}\` and \`{tenantId, campaignId|direction|status|agentId, startedAt: -1, _id: -1}\`
serve each page (the index check in the tests sees no collection scan). On MongoDB 7 the page is a bounded index walk of 26
keys and the total a count capped at 10,000 keys. The embedded store sorts in memory: it reads every matching call
before keeping 25 (decision 0110), so a ratio above 1.5 here measures that limit of the local store, as the bare
driver's column shows.

**(b) Calls end to end** at full simulator speed-up (100,000×): ${DIALS} live call leads ingested at once for one tenant
with a package of ${limit} lines, each call placed, ended, charged and announced to the tenant's webhook endpoint.

| measured | result | target | met |
|---|---|---|---|
| calls placed and ended per second | **${perSecond.toFixed(1)}** (at most ${most} in progress; a call's own wall time p50 ${perCall} ms) | ≥ 50 | ${met(perSecond >= 50)} |
| end of call → \`call.outbound.billed\` received, p99 | **${billedP99} ms** (${billedLags.length} of ${ended} received) | < 1 s | ${met(billedLags.length === ended && billedP99 < 1000)} |
| store operations per call, every process, its lead's ingest included | **${opsPerCall.split(' ')[0]}** | ≤ 12 | ${met(Number(opsPerCall.split(' ')[0]) <= 12)} |

Store operations: ${opsPerCall}.

Where the CPU went from the first lead's ingest to the last call's end (/proc): ${cpuShares}.`;
    writePerformanceSection('telephony', md);
    process.stdout.write('docs/performance.md updated (telephony section)\n');
  } finally {
    await conn.close().catch(() => undefined); // teardown: the measurement is written, and a failed close must not hide an earlier error
    await sys.stop();
    await receiver.stop();
    await infra.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
