// Over 300 lines because one benchmark scenario from start to report; its steps share one started system.
/**
 * The system as a tenant meets it (`make bench`, issue 33): every process as `make run` starts it
 * (gateway, every service, the store, Kafka) on this machine, the carrier simulator at 200×, a
 * tenant's webhook endpoint and the load generator beside them. In one run:
 *   (a) the bare Express rate: the yardstick the rates below are divided by;
 *   (b) calls end to end, three rounds on growing data for each of two tenants (one with an endpoint
 *       for every event type, one for `call.outbound.billed` only): CALLS call leads sent in one
 *       batch for a tenant with 100 lines, each placed, ended, charged and announced; calls per
 *       second, and each process's CPU and the documents written per call, counted until the store
 *       is quiet, with what the idle system does taken out (BENCH_SYSTEM_PARTS=b stops here);
 *   (c) end of call → `call.outbound.billed` received, at half the rate (b) reached, leads paced;
 *   (d) live `POST /leads` (32 connections) for another tenant, at its default line count, first
 *       with telephony stopped (SIGSTOP), then while telephony dials the backlog that left: the
 *       ratio of the two rates, and each process's CPU per accepted lead; three rounds.
 * Writes its section of docs/performance.md. It reports; it never fails on time.
 *
 * BENCH_COMMIT=<commit> runs every process from that commit's build instead of this checkout's (the
 * measurements stay this checkout's), so an old and a new commit are measured one after the other on
 * the same day; the section is then written to the file BENCH_REPORT names, not docs/performance.md.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import mongoose from 'mongoose';
import { Receiver } from '../../services/webhooks/test/receiver';
import { provideInfra, useInfra } from '../harness/infra';
import { call, startSystem, tenantWithKey } from '../harness/system';
import { perOperation, storeOpsDelta } from '../harness/store-ops';
import { bareExpress } from './bare';
import { cpuLine, cpuMsPerOperation, cpuPerOperation, cpuWindow, systemPids, type CpuShares } from './cpu';
import { PROFILE_DIR } from '../harness/processes';
import { monotonicUs, perfProfile, summarizeProfiles } from './profiles';
import { writePerformanceSection } from './report';
import { BENCH_PROMETHEUS_FEATURES, delayP99s, sliFigures, sliTable } from './slis';
import { startPrometheus, type Prometheus } from '../harness/prometheus';
import { writeRules } from '../../tools/observability';
import { flowPerOperation, kafkaFlowMeter } from './kafka-flow';
import { releaseBuild } from '../harness/release-build';
import { sleep } from '../harness/wait';
import { loadManifest } from '@voiceapi/local-infra';
import { writeFileSync } from 'node:fs';

const CALLS = Number(process.env.BENCH_SYSTEM_CALLS ?? 400);
const INGEST_S = Number(process.env.BENCH_SYSTEM_INGEST_S ?? 15);
const PACED_S = Number(process.env.BENCH_SYSTEM_PACED_S ?? 20);
/** How long the idle system is watched before (b): its writes and CPU are taken out of each round. */
const IDLE_S = 5;
/** BENCH_SYSTEM_PARTS=b measures only (a) and (b): a quick look at one step of the call path. */
const ONLY_CALLS = process.env.BENCH_SYSTEM_PARTS === 'b';
/** The two tenants of (b): a CRM with an endpoint for every event type (issue 50), and one for billed calls only. */
type TenantKind = 'all-events' | 'billed-only';
const CONNECTIONS = 32;
const ROUNDS = 3;
const SPEEDUP = '200';
/** How often each process pushes its metrics in (e): OBSERVE=1 make run's interval. */
const EXPORT_MS = 5_000;
/**
 * CPU per call of the whole system before issue 33, in bare Express requests' worth of CPU (each
 * figure divided by the bare server's CPU per request in the same run, so machines compare): the
 * first full run of this benchmark, 2026-11-27 on commit cad5e29: 63.9 ms per call ÷ 0.034 ms per bare
 * request (docs/performance.md, issue 33's before and after).
 */
const BEFORE_CALL_IN_BARE_REQUESTS = Number(process.env.BENCH_SYSTEM_BEFORE ?? 1906);

const docsText = (d: { inserted: number; updated: number; deleted: number }) =>
  `${(d.inserted + d.updated + d.deleted).toFixed(1)} (${d.inserted.toFixed(1)} inserted, ${d.updated.toFixed(1)} updated, ${d.deleted.toFixed(1)} deleted)`;
const met = (ok: boolean) => (ok ? 'yes' : 'no');
const pct = (xs: number[], p: number) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
};
const total = (byProcess: Record<string, number>, leaveOut: string[] = []) =>
  Object.entries(byProcess).reduce((n, [name, x]) => (leaveOut.includes(name) ? n : n + x), 0);
/** The processes of the system: the load generator (autocannon, the webhook receiver) is measured but is not the system. */
const OUTSIDE = ['the load generator'];

interface CallsRound {
  calls: number;
  seconds: number;
  perSecond: number;
  billedLags: number[];
  cpu: CpuShares;
  ops: string;
  /** Documents the store wrote (inserted, updated, deleted) per call, by its own count: a bulk write is one command but many documents. */
  docs: { inserted: number; updated: number; deleted: number };
  /** Events produced and Kafka deliveries per call. */
  kafka: ReturnType<typeof flowPerOperation>;
  /** Webhooks the tenant's endpoint received per call. */
  webhooks: number;
  /** Cursors open on the store while the calls ran, sampled (each process's change stream is one). */
  cursors: { median: number; max: number };
}

interface IngestRound {
  paused: { rps: number; p99: number; cpu: CpuShares; ops: string; accepted: number };
  dialling: { rps: number; p99: number; cpu: CpuShares; ops: string; accepted: number; callsEnded: number };
}

async function main(): Promise<void> {
  const infra = await provideInfra((l) => process.stderr.write(`[infra] ${l}\n`));
  useInfra(infra);
  const receiver = await new Receiver().start();
  const commit = process.env.BENCH_COMMIT;
  const root = commit ? releaseBuild(commit) : undefined;
  // As `make run` starts it, production settings: no response-schema check, warnings only.
  const systemOptions = {
    builds: root ? Object.fromEntries(loadManifest().processes.map((p) => [p.name, root])) : {},
    gatewayEnv: { RATE_LIMIT_PER_SECOND: '1000000000', LOG_LEVEL: 'warn', RESPONSE_SCHEMA_CHECK: 'false' },
    serviceEnv: {
      telephony: { CARRIER_SIMULATOR_SPEEDUP: SPEEDUP },
      leads: { CALLING_WINDOW_DEFAULT: 'always' },
      webhooks: { OUTBOUND_ALLOWLIST: receiver.hostPort },
    },
  };
  let sys = await startSystem(systemOptions);
  let prom: Prometheus | undefined;
  const rulesDir = mkdtempSync(path.join(tmpdir(), 'voiceapi-bench-rules-'));
  const gw = sys.gateways[0]!.url;
  const pids = systemPids(sys, infra);
  const kafkaFlow = await kafkaFlowMeter(infra.kafkaBrokers);
  // BENCH_PROFILE's processes: their samples of round 1 of (b), reported at the end.
  let profiledFrom: number | undefined;
  let profiledTo: number | undefined;
  const telephonyDb = await mongoose
    .createConnection(infra.mongoUrl, { dbName: sys.gatewayDb.replace(/^gateway_/, 'telephony_') })
    .asPromise();
  const calls = telephonyDb.collection<{ _id: string; tenantId: string; endedAt?: Date }>('calls');
  /** The store's own count of documents written (serverStatus `metrics.document`), every database together. */
  const storeDocs = async () => {
    const { metrics } = (await telephonyDb.db!.admin().command({ serverStatus: 1 })) as {
      metrics?: { document?: { inserted?: number; updated?: number; deleted?: number } };
    };
    return {
      inserted: metrics?.document?.inserted ?? NaN,
      updated: metrics?.document?.updated ?? NaN,
      deleted: metrics?.document?.deleted ?? NaN,
    };
  };
  /** Cursors open on the store (serverStatus `metrics.cursor.open.total`): change streams, and finds between batches. */
  const openCursors = async () => {
    const { metrics } = (await telephonyDb.db!.admin().command({ serverStatus: 1 })) as {
      metrics?: { cursor?: { open?: { total?: number } } };
    };
    return metrics?.cursor?.open?.total ?? NaN;
  };
  const leadsDb = telephonyDb.useDb(sys.gatewayDb.replace(/^gateway_/, 'leads_'));
  /**
   * Waits until leads has followed every call of the campaign to its outcome (no contact left
   * queued, dialing or in a call): a round's costs are read then, so work a round left behind (the
   * contacts' moves after the billed webhooks are in) is counted in its own round, not the next.
   */
  const settled = async (campaignId: string) => {
    const until = Date.now() + 120_000;
    while (
      (await leadsDb
        .collection('contacts')
        .countDocuments({ campaignId, status: { $in: ['queued', 'dialing', 'in_call'] } })) > 0 &&
      Date.now() < until
    )
      await sleep(100);
  };
  /** From each call's end (its row's `endedAt`) to its \`call.outbound.billed\` received. */
  const billedLags = async (received: { body: string; at: number }[]) => {
    const ids = received.map((r) => (JSON.parse(r.body) as { data: { callId: string } }).data.callId);
    const ends = new Map(
      (await calls.find({ _id: { $in: ids } }, { projection: { endedAt: 1 } }).toArray()).map((c) => [
        c._id,
        c.endedAt?.getTime(),
      ]),
    );
    return received.map((r, i) => r.at - (ends.get(ids[i]!) ?? NaN)).filter(Number.isFinite);
  };
  try {
    process.stdout.write('(a) bare Express, 10 s, 16 connections\n');
    const bare = await bareExpress(10, 16);
    process.stdout.write(`  ${bare.rps.toFixed(0)} req/s, ${bare.cpuMsPerRequest.toFixed(3)} ms CPU per request\n`);

    // ---- (b) calls end to end, for two tenants: a CRM with an endpoint for every event type, and one for billed calls only ----
    const crm = await tenantSetUp(gw, { lines: 100, hook: `${receiver.base}/crm` }, receiver);
    const billedOnly = await tenantSetUp(
      gw,
      { lines: 100, hook: `${receiver.base}/billed`, events: ['call.outbound.billed'] },
      receiver,
    );
    let next = 0;
    // Numbers the simulator answers and talks 15–180 s (75–900 ms here), distinct across the run.
    const phone = () => {
      const n = next++;
      return `+1415${200 + (Math.floor(n / 9000) % 700)}${1000 + (n % 9000)}`;
    };
    const consent = { outboundCall: true, capturedAt: '2026-11-01T10:00:00Z' };
    /** The `call.outbound.billed` deliveries an endpoint received after its first `from`. */
    const billedOf = (hookPath: string, from = 0) =>
      receiver
        .at(hookPath)
        .slice(from)
        .filter((r) => (JSON.parse(r.body) as { type: string }).type === 'call.outbound.billed');
    // What the system does with nothing to do (workers' passes, heartbeats): taken out of each round.
    await sleep(3_000);
    const idle = await idleRates(storeDocs, pids, IDLE_S);
    const idleCursors = await openCursors();
    process.stdout.write(
      `(b) idle, ${IDLE_S} s: ${idle.docsPerSecond.toFixed(1)} documents written/s, ${idleCursors} cursors open on the store, CPU ${cpuLine(idle.cpu)}\n`,
    );
    const callRounds: Record<TenantKind, CallsRound[]> = { 'all-events': [], 'billed-only': [] };
    for (const [kind, tenant, hookPath] of [
      ['all-events', crm, '/crm'],
      ['billed-only', billedOnly, '/billed'],
    ] as const) {
      for (let round = 1; round <= ROUNDS; round++) {
        process.stdout.write(`(b) ${kind} tenant, round ${round}: ${CALLS} call leads at once\n`);
        const seen = receiver.at(hookPath).length;
        const ops0 = await sys.storeOps();
        const docs0 = await storeDocs();
        const flow0 = await kafkaFlow.snapshot();
        const cpu = cpuWindow(pids);
        const t0 = Date.now();
        const profiled = round === 1 && kind === 'all-events';
        if (profiled) profiledFrom = monotonicUs();
        // The store's open cursors, twice a second while the calls run.
        const cursorSamples: number[] = [];
        let sampling = true;
        const sampler = (async () => {
          while (sampling) {
            cursorSamples.push(await openCursors());
            await sleep(500);
          }
        })();
        const { report } = await perfProfile(profiled ? infra.storePid : undefined, 'store-calls', async () => {
          const sent = await call(`${gw}/api/v1/leads/batch`, {
            key: tenant.key,
            body: {
              campaignId: tenant.campaignId,
              leads: Array.from({ length: CALLS }, () => ({ phone: phone(), channel: 'call', consent })),
            },
          });
          if (sent.status !== 200) throw new Error(`batch: ${sent.status} ${JSON.stringify(sent.body).slice(0, 300)}`);
          const until = Date.now() + 300_000;
          while (new Set(billedOf(hookPath, seen).map((r) => r.id)).size < CALLS && Date.now() < until)
            await sleep(100);
        });
        sampling = false;
        await sampler;
        if (report) process.stdout.write(`  the store's self time during round 1 (perf):\n${report}\n`);
        if (profiled) profiledTo = monotonicUs();
        const received = unique(billedOf(hookPath, seen));
        const seconds = (Math.max(...received.map((r) => r.at)) - t0) / 1000;
        await settled(tenant.campaignId);
        // The work's tail (contacts' last moves, their webhooks, outboxes emptied) belongs to the round.
        const quietAfterS = await quiet(storeDocs, idle.docsPerSecond);
        const shares = withoutIdle(cpu(), idle.cpu);
        const ops = perOperation(storeOpsDelta(ops0, await sys.storeOps()), received.length, 'call');
        const docs1 = await storeDocs();
        const idleDocs = idle.docsPerSecond * shares.seconds;
        const docs = {
          inserted: (docs1.inserted - docs0.inserted - idleDocs / 3) / received.length,
          updated: (docs1.updated - docs0.updated - idleDocs / 3) / received.length,
          deleted: (docs1.deleted - docs0.deleted - idleDocs / 3) / received.length,
        };
        // Consumers commit what they read a moment after it: the last of them settle first.
        await sleep(3_000);
        const kafka = flowPerOperation(flow0, await kafkaFlow.snapshot(), received.length);
        callRounds[kind].push({
          calls: received.length,
          seconds,
          perSecond: received.length / seconds,
          billedLags: await billedLags(received),
          cpu: shares,
          ops,
          docs,
          kafka,
          webhooks: (receiver.at(hookPath).length - seen) / received.length,
          cursors: { median: median(cursorSamples), max: Math.max(...cursorSamples) },
        });
        process.stdout.write(
          `  ${received.length} calls billed and announced in ${seconds.toFixed(1)} s (${(received.length / seconds).toFixed(1)} calls/s), quiet ${quietAfterS.toFixed(0)} s later\n  CPU per call ${cpuPerOperation(shares, received.length)}\n  store operations ${ops}\n  documents written per call ${docsText(docs)}\n  webhooks per call ${callRounds[kind].at(-1)!.webhooks.toFixed(2)}, cursors open on the store ${callRounds[kind].at(-1)!.cursors.median} (most ${callRounds[kind].at(-1)!.cursors.max})\n  per call: ${kafka.text}\n`,
        );
      }
    }
    const caller = crm;

    // ---- (c) end of call → billed, at half the rate ----
    if (ONLY_CALLS) {
      const md = callsTable(callRounds, bare.cpuMsPerRequest, idleCursors);
      process.stdout.write(`${md}\n`);
      if (process.env.BENCH_REPORT) writeFileSync(process.env.BENCH_REPORT, md);
      return;
    }
    const half = callRounds['all-events'][0]!.perSecond / 2;
    process.stdout.write(`(c) ${half.toFixed(1)} calls/s for ${PACED_S} s, leads paced\n`);
    const pacedFrom = receiver.at('/crm').length;
    const pacedSent = await pace(gw, caller, half, PACED_S, phone);
    const pacedUntil = Date.now() + 60_000;
    while (unique(billedOf('/crm', pacedFrom)).length < pacedSent && Date.now() < pacedUntil) await sleep(100);
    const paced = unique(billedOf('/crm', pacedFrom));
    const pacedLags = await billedLags(paced);
    process.stdout.write(
      `  ${paced.length} of ${pacedSent}: end → billed received p50 ${pct(pacedLags, 50)} ms, p99 ${pct(pacedLags, 99)} ms\n`,
    );

    // ---- (d) ingest while the backlog is dialled ----
    const ingester = await tenantSetUp(gw, {}, receiver);
    const telephonyPid = sys.services.telephony!.child.pid!;
    let leadNo = 0;
    const ingest = (seconds: number) =>
      new Promise<{ rps: number; p99: number; accepted: number }>((resolve, reject) => {
        let accepted = 0;
        autocannon(
          {
            url: `${gw}/api/v1/leads`,
            connections: CONNECTIONS,
            duration: seconds,
            requests: [
              {
                method: 'POST',
                headers: { authorization: `Bearer ${ingester.key}`, 'content-type': 'application/json' },
                setupRequest: (req: autocannon.Request) => ({
                  ...req,
                  body: JSON.stringify({
                    campaignId: ingester.campaignId,
                    phone: `+1415${5_000_000 + leadNo++}`,
                    channel: 'call',
                    consent,
                  }),
                }),
                onResponse: (status: number) => void (status === 202 && accepted++),
              },
            ],
          },
          // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- autocannon's own error, passed on as it was
          (err, r) => (err ? reject(err) : resolve({ rps: accepted / seconds, p99: r.latency.p99, accepted })),
        );
      });
    const endedCalls = () => calls.countDocuments({ tenantId: ingester.tenantId, endedAt: { $exists: true } });
    const ingestRounds: IngestRound[] = [];
    process.stdout.write('(d) warm-up 5 s\n');
    await ingest(5);
    for (let round = 1; round <= ROUNDS; round++) {
      // Telephony is stopped, so it cannot answer for its store operations: read before and after.
      const pausedOps0 = await sys.storeOps();
      process.kill(telephonyPid, 'SIGSTOP');
      let run: Awaited<ReturnType<typeof ingest>>;
      let pausedCpu: CpuShares;
      try {
        const cpu = cpuWindow(pids);
        run = await ingest(INGEST_S);
        pausedCpu = cpu();
      } finally {
        process.kill(telephonyPid, 'SIGCONT');
      }
      const paused = {
        ...run,
        cpu: pausedCpu,
        ops: perOperation(storeOpsDelta(pausedOps0, await sys.storeOps()), run.accepted, 'accepted lead'),
      };
      // Telephony back: its consumers rejoin and it dials the backlog at the tenant's default line count.
      await sleep(5_000);
      const ops0 = await sys.storeOps();
      const cpu = cpuWindow(pids);
      const calls0 = await endedCalls();
      const r = await ingest(INGEST_S);
      const shares = cpu();
      const callsEnded = (await endedCalls()) - calls0;
      const dialling = {
        ...r,
        cpu: shares,
        ops: perOperation(storeOpsDelta(ops0, await sys.storeOps()), r.accepted, 'accepted lead'),
        callsEnded,
      };
      ingestRounds.push({ paused, dialling });
      process.stdout.write(
        `  round ${round}: telephony stopped ${paused.rps.toFixed(0)} leads/s (p99 ${paused.p99} ms), dialling ${dialling.rps.toFixed(0)} leads/s (p99 ${dialling.p99} ms, ${(callsEnded / INGEST_S).toFixed(1)} calls/s ended meanwhile): ${(dialling.rps / paused.rps).toFixed(2)}\n` +
          `    CPU per accepted lead, stopped: ${cpuPerOperation(paused.cpu, paused.accepted)}\n    dialling: ${cpuPerOperation(shares, r.accepted)}\n`,
      );
    }

    // ---- (e) the SLOs' figures, as Prometheus reads them ----
    // A second system like the first but with every process pushing its metrics (as with
    // OBSERVE=1 make run), so the figures above are not measured with telemetry on.
    process.stdout.write(
      `(e) the SLOs as Prometheus reads them: every process pushing metrics, ${half.toFixed(1)} calls/s for ${PACED_S} s, ${ROUNDS} rounds\n`,
    );
    await sys.stop();
    prom = await startPrometheus({
      ruleFiles: writeRules(rulesDir, { windowScale: 1 }),
      evaluationIntervalS: 5,
      features: BENCH_PROMETHEUS_FEATURES,
    });
    const observed = await startSystem({
      ...systemOptions,
      env: { OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: prom.otlpMetricsUrl, OTEL_METRIC_EXPORT_INTERVAL: String(EXPORT_MS) },
    });
    sys = observed;
    const watched = await tenantSetUp(
      observed.gateways[0]!.url,
      { lines: 100, hook: `${receiver.base}/watched` },
      receiver,
    );
    const sliRounds: Parameters<typeof sliTable>[0] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const from = receiver.at('/watched').length;
      const t0 = Date.now();
      const sent = await pace(observed.gateways[0]!.url, watched, half, PACED_S, phone);
      const until = Date.now() + 60_000;
      while (unique(receiver.at('/watched').slice(from)).length < sent && Date.now() < until) await sleep(100);
      await sleep(EXPORT_MS + 1_000); // every process's last figures pushed
      const windowS = (Date.now() - t0) / 1000;
      sliRounds.push({ figures: await sliFigures(prom, windowS), delays: await delayP99s(prom, windowS) });
      process.stdout.write(
        `  round ${round}: ${sliRounds[round - 1]!.figures.map((f) => `${f.slo} ${(f.good * 100).toFixed(2)} %`).join(', ')}\n`,
      );
    }

    // ---- the report ----
    const crmRounds = callRounds['all-events'];
    const first = crmRounds[0]!;
    const lastCalls = crmRounds[ROUNDS - 1]!;
    const callRatio = first.perSecond / bare.rps;
    const cpuPerCall = cpuMsPerOperation(first.cpu, first.calls);
    const systemMsPerCall = total(cpuPerCall, OUTSIDE);
    const callInBare = systemMsPerCall / bare.cpuMsPerRequest;
    const ingestRatio = (r: IngestRound) => r.dialling.rps / r.paused.rps;
    const lastIngest = ingestRounds[ROUNDS - 1]!;
    const firstIngest = ingestRounds[0]!;
    const table = perProcessTable([
      { label: 'per call, all-events tenant (b, round 1)', ms: cpuPerCall },
      {
        label: 'per call, billed-only tenant (b, round 1)',
        ms: cpuMsPerOperation(callRounds['billed-only'][0]!.cpu, callRounds['billed-only'][0]!.calls),
      },
      {
        label: `per accepted lead, telephony stopped (d, round 1)`,
        ms: cpuMsPerOperation(firstIngest.paused.cpu, firstIngest.paused.accepted),
      },
      {
        label: `per accepted lead, dialling (d, round 1)`,
        ms: cpuMsPerOperation(firstIngest.dialling.cpu, firstIngest.dialling.accepted),
      },
    ]);
    const md = `## The system a tenant meets (issue 33)

One run of \`make bench\` (\`test/bench/whole-system.ts\`) on this machine (${cpus().length} cores), every process as \`make run\` starts it
(gateway, every service, the store, Kafka), the carrier simulator at ${SPEEDUP}×, the tenant's webhook endpoint and the load
generator on the same machine. The bare Express rate of the same run is the yardstick: **${bare.rps.toFixed(0)} req/s**, its server
spending ${bare.cpuMsPerRequest.toFixed(3)} ms of CPU per request.

| measurement | result | target | met |
|---|---|---|---|
| calls end to end per second (${CALLS} call leads at once, 100 lines; placed, ended, charged, \`call.outbound.billed\` received) ÷ bare Express req/s, round 1 | ${first.perSecond.toFixed(1)} calls/s ÷ ${bare.rps.toFixed(0)} = **${callRatio.toFixed(4)}** | ≥ 0.0066 | ${met(callRatio >= 0.0066)} |
| the same, rounds 1 → ${ROUNDS} | ${crmRounds.map((r) => r.perSecond.toFixed(1)).join(' → ')} calls/s | run ${ROUNDS} ≥ 0.9 × run 1 | ${met(lastCalls.perSecond >= 0.9 * first.perSecond)} |
| end of call → \`call.outbound.billed\` received at ${half.toFixed(1)} calls/s (half of round 1), p99 | p50 ${pct(pacedLags, 50)} ms, **p99 ${pct(pacedLags, 99)} ms** (${paced.length} of ${pacedSent} calls) | < 1 s | ${met(paced.length === pacedSent && pct(pacedLags, 99) < 1000)} |
| accepted leads/s while the same tenant's backlog is dialled ÷ with telephony stopped, round 1 | ${firstIngest.dialling.rps.toFixed(0)} ÷ ${firstIngest.paused.rps.toFixed(0)} = **${ingestRatio(firstIngest).toFixed(2)}** (${(firstIngest.dialling.callsEnded / INGEST_S).toFixed(1)} calls/s ended meanwhile) | ≥ 0.7 | ${met(ingestRatio(firstIngest) >= 0.7)} |
| the same, rounds 1 → ${ROUNDS} | ${ingestRounds.map((r) => `${r.dialling.rps.toFixed(0)} ÷ ${r.paused.rps.toFixed(0)} = ${ingestRatio(r).toFixed(2)}`).join(' → ')} | run ${ROUNDS} ≥ 0.9 × run 1 | ${met(lastIngest.dialling.rps >= 0.9 * firstIngest.dialling.rps)} |
| CPU per call, every process of the system, in bare Express requests' worth of CPU | ${systemMsPerCall.toFixed(1)} ms = **${callInBare.toFixed(0)}** bare requests${Number.isFinite(BEFORE_CALL_IN_BARE_REQUESTS) ? ` (before issue 33: ${BEFORE_CALL_IN_BARE_REQUESTS.toFixed(0)})` : ''} | ≤ ⅓ of before | ${Number.isFinite(BEFORE_CALL_IN_BARE_REQUESTS) ? met(callInBare <= BEFORE_CALL_IN_BARE_REQUESTS / 3) : 'no'} |

The call path (issue 50), per answered call in (b), for a tenant with an endpoint for every event type (a CRM syncing statuses)
and one with an endpoint for \`call.outbound.billed\` only: counted from the batch until the store writes no more than it does idle,
and what the system writes and spends idle (measured ${IDLE_S} s before) taken out.

${callsTable(callRounds, bare.cpuMsPerRequest, idleCursors)}

CPU milliseconds per business operation, each process (from /proc over the measured window, idle taken out in (b); the load
generator holds autocannon and the tenants' webhook endpoint, and is not counted in the totals).

${table}

Kafka per call (b, all-events tenant), rounds 1 → ${ROUNDS}: events produced ${crmRounds.map((r) => r.kafka.produced.toFixed(1)).join(' → ')} (target ≤ 4), deliveries ${crmRounds.map((r) => r.kafka.delivered.toFixed(1)).join(' → ')} (target ≤ 8); round 1: ${first.kafka.text}.
Store operations per accepted lead (d), round 1, telephony stopped: ${firstIngest.paused.ops}; dialling: ${firstIngest.dialling.ops}.

The SLOs of \`observability/slos.yaml\` as Prometheus reads them (e): the same system started again with every process pushing
its metrics every ${EXPORT_MS / 1000} s (as \`OBSERVE=1 make run\`), calls paced at ${half.toFixed(1)} calls/s for ${PACED_S} s a round, each SLI's own
queries over the round. A share of good events, and the delays behind three of them (p99 from histogram buckets: an upper bound).

${sliTable(sliRounds)}`;
    if (commit) {
      const report = process.env.BENCH_REPORT ?? path.join(tmpdir(), `voiceapi-system-${commit.slice(0, 7)}.md`);
      writeFileSync(report, md);
      process.stdout.write(`${md}\n\nthe processes of ${commit}: written to ${report}\n`);
    } else {
      writePerformanceSection('system', md);
      process.stdout.write(`${md}\n\ndocs/performance.md updated (system section)\n`);
    }
  } finally {
    await receiver.stop();
    await kafkaFlow.close();
    await telephonyDb.close();
    await sys.stop();
    await prom?.stop();
    rmSync(rulesDir, { recursive: true, force: true });
    await infra.stop();
  }
  if (process.env.BENCH_PROFILE) process.stdout.write(summarizeProfiles(PROFILE_DIR, 30, profiledFrom, profiledTo));
}

/** Sends `rate` call leads a second for `seconds` (batches every 100 ms); how many were accepted. */
async function pace(
  gw: string,
  t: { key: string; campaignId: string },
  rate: number,
  seconds: number,
  phone: () => string,
): Promise<number> {
  const consent = { outboundCall: true, capturedAt: '2026-11-01T10:00:00Z' };
  let sent = 0;
  const start = Date.now();
  while (Date.now() - start < seconds * 1000) {
    const tick = Date.now();
    const due = Math.floor(((tick - start) / 1000) * rate) + 1 - sent;
    if (due > 0) {
      const r = await call(`${gw}/api/v1/leads/batch`, {
        key: t.key,
        body: {
          campaignId: t.campaignId,
          leads: Array.from({ length: due }, () => ({ phone: phone(), channel: 'call', consent })),
        },
      });
      if (r.status === 200) sent += due;
    }
    await sleep(Math.max(0, 100 - (Date.now() - tick)));
  }
  return sent;
}

/** A tenant with a key, credits, a campaign open all day and (`hook`) a webhook endpoint for `events` (every type when absent). */
async function tenantSetUp(
  gw: string,
  opts: { lines?: number; hook?: string; events?: string[] },
  receiver: Receiver,
): Promise<{ tenantId: string; key: string; campaignId: string }> {
  const t = await tenantWithKey(gw, { rateLimitPerSecond: 100_000 });
  const admin = (p: string, body?: unknown, method?: string) =>
    call(`${gw}/admin/v1/tenants/${t.tenantId}${p}`, {
      admin: true,
      ...(body !== undefined && { body }),
      ...(method && { method }),
    });
  await admin('/credits', { amount: 1_000_000_000 });
  if (opts.lines && (await admin('/concurrency', { maxConcurrentCalls: opts.lines }, 'PUT')).status !== 200)
    throw new Error('could not set the line count');
  const c = await admin('/campaigns', { name: 'system bench', maxCallSeconds: 120 });
  const campaignId = c.body.campaign.id as string;
  await admin(`/campaigns/${campaignId}/start`, undefined, 'POST');
  if (opts.hook) {
    // No `events`: an endpoint for every event type.
    const hook = await admin('/webhooks', { url: opts.hook, ...(opts.events && { events: opts.events }) });
    if (hook.status !== 201) throw new Error(`webhook registration: ${hook.status} ${JSON.stringify(hook.body)}`);
    receiver.secrets.set(new URL(opts.hook).pathname, [hook.body.webhook.secret]);
  }
  return { ...t, campaignId };
}

const unique = <T extends { id: string }>(xs: T[]) => [...new Map(xs.map((x) => [x.id, x])).values()];

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const docsOf = (r: CallsRound) => r.docs.inserted + r.docs.updated + r.docs.deleted;
const systemMs = (r: CallsRound) => total(cpuMsPerOperation(r.cpu, r.calls), OUTSIDE);

/** What the system writes and spends per second with nothing to do, over `seconds`. */
async function idleRates(
  storeDocs: () => Promise<{ inserted: number; updated: number; deleted: number }>,
  pids: Record<string, number | undefined>,
  seconds: number,
): Promise<{ docsPerSecond: number; cpu: CpuShares }> {
  const sum = (d: { inserted: number; updated: number; deleted: number }) => d.inserted + d.updated + d.deleted;
  const d0 = sum(await storeDocs());
  const cpu = cpuWindow(pids);
  await sleep(seconds * 1000);
  const shares = cpu();
  return { docsPerSecond: (sum(await storeDocs()) - d0) / shares.seconds, cpu: shares };
}

/**
 * Waits until the store writes no more than it does idle (a second at a time, at most a minute):
 * the seconds waited. The work a round leaves (contacts' last moves, their webhooks, outboxes
 * emptied, deliveries unclaimed) is counted in its round.
 */
async function quiet(
  storeDocs: () => Promise<{ inserted: number; updated: number; deleted: number }>,
  idleDocsPerSecond: number,
): Promise<number> {
  const sum = (d: { inserted: number; updated: number; deleted: number }) => d.inserted + d.updated + d.deleted;
  const t0 = Date.now();
  let last = sum(await storeDocs());
  while (Date.now() - t0 < 60_000) {
    await sleep(1_000);
    const now = sum(await storeDocs());
    if (now - last <= idleDocsPerSecond + 2) break;
    last = now;
  }
  return (Date.now() - t0) / 1000;
}

/** A window's CPU shares less what each process spends idle. */
function withoutIdle(s: CpuShares, idle: CpuShares): CpuShares {
  const byProcess = Object.fromEntries(
    Object.entries(s.byProcess).map(([name, x]) => [name, Math.max(0, x - (idle.byProcess[name] ?? 0))]),
  );
  return { ...s, byProcess, machine: Math.max(0, s.machine - idle.machine) };
}

/** Issue 50's table: documents and CPU per call for each tenant, median of the rounds. */
function callsTable(rounds: Record<TenantKind, CallsRound[]>, bareMsPerRequest: number, idleCursors: number): string {
  const row = (kind: TenantKind, docsTarget: number, cpuTarget: number) => {
    const rs = rounds[kind];
    const docs = median(rs.map(docsOf));
    const ms = median(rs.map(systemMs));
    return [
      `| documents written per answered call, ${kind} tenant (median of ${rs.length}; rounds ${rs.map((r) => docsOf(r).toFixed(1)).join(', ')}) | **${docs.toFixed(1)}** | ≤ ${docsTarget} | ${met(docs <= docsTarget)} |`,
      `| CPU per answered call, every process, ${kind} tenant (median; rounds ${rs.map((r) => systemMs(r).toFixed(1)).join(', ')} ms) | **${ms.toFixed(1)} ms** = ${(ms / bareMsPerRequest).toFixed(0)} bare Express requests | ≤ ${cpuTarget} ms | ${met(ms <= cpuTarget)} |`,
    ].join('\n');
  };
  const detail = (kind: TenantKind) =>
    rounds[kind]
      .map(
        (r, i) =>
          `- ${kind}, round ${i + 1}: ${r.calls} calls, ${r.perSecond.toFixed(1)} calls/s, ${r.webhooks.toFixed(2)} webhooks a call, ${r.cursors.median} cursors open on the store (most ${r.cursors.max}); documents ${docsText(r.docs)}; CPU ${cpuPerOperation(r.cpu, r.calls)}; store operations ${r.ops}`,
      )
      .join('\n');
  const cursors = median(Object.values(rounds).flatMap((rs) => rs.map((r) => r.cursors.median)));
  return `| per answered outbound call (b: ${CALLS} call leads at once, 100 lines, counted until the store is quiet, idle taken out) | result | target | met |
|---|---|---|---|
${row('all-events', 20, 25)}
${row('billed-only', 12, 15)}
| cursors open on the store while calls run (serverStatus; each process's change stream is one, a find between batches another), median of every round's samples | ${cursors} (most ${Math.max(...Object.values(rounds).flatMap((rs) => rs.map((r) => r.cursors.max)))}; idle ${idleCursors}) | 0 change streams, or each named with its cost | ${met(cursors === 0)} |

${detail('all-events')}
${detail('billed-only')}`;
}

/** Processes as rows, the operations as columns, busiest first; the system's total under them. */
function perProcessTable(columns: { label: string; ms: Record<string, number> }[]): string {
  const names = [...new Set(columns.flatMap((c) => Object.keys(c.ms)))].sort(
    (a, b) => (columns[0]!.ms[b] ?? 0) - (columns[0]!.ms[a] ?? 0),
  );
  const rows = names.map((n) => `| ${n} | ${columns.map((c) => (c.ms[n] ?? 0).toFixed(1)).join(' | ')} |`);
  return [
    `| CPU ms, by process | ${columns.map((c) => c.label).join(' | ')} |`,
    `|---|${columns.map(() => '---').join('|')}|`,
    ...rows,
    `| **the system (all but the load generator)** | ${columns.map((c) => `**${total(c.ms, OUTSIDE).toFixed(1)}**`).join(' | ')} |`,
  ].join('\n');
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
