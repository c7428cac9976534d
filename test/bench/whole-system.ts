// Over 300 lines because one benchmark scenario from start to report; its steps share one started system.
/**
 * The system as a tenant meets it (`make bench`, issue 33): every process as `make run` starts it
 * (gateway, every service, the store, Kafka) on this machine, the carrier simulator at 200×, a
 * tenant's webhook endpoint and the load generator beside them. In one run:
 *   (a) the bare Express rate: the yardstick the rates below are divided by;
 *   (b) calls end to end, three rounds on growing data: CALLS call leads sent in one batch for a
 *       tenant with 100 lines, each placed, ended, charged and announced (`call.outbound.billed`
 *       received by the tenant's endpoint); calls per second, and each process's CPU and the store
 *       operations per call;
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
import { cpuMsPerOperation, cpuPerOperation, cpuWindow, systemPids, type CpuShares } from './cpu';
import { PROFILE_DIR } from '../harness/processes';
import { monotonicUs, perfProfile, summarizeProfiles } from './profiles';
import { writePerformanceSection } from './report';
import { BENCH_PROMETHEUS_FEATURES, delayP99s, sliFigures, sliTable } from './slis';
import { startPrometheus, type Prometheus } from '../harness/prometheus';
import { writeRules } from '../tools/observability';
import { flowPerOperation, kafkaFlowMeter } from './kafka-flow';
import { releaseBuild } from '../harness/release-build';
import { sleep } from '../harness/wait';
import { loadManifest } from '@voiceapi/local-infra';
import { writeFileSync } from 'node:fs';

const CALLS = Number(process.env.BENCH_SYSTEM_CALLS ?? 400);
const INGEST_S = Number(process.env.BENCH_SYSTEM_INGEST_S ?? 15);
const PACED_S = Number(process.env.BENCH_SYSTEM_PACED_S ?? 20);
/**
 * The tenant's endpoint: every event type by default (a CRM syncing statuses, as the call path is
 * decided to be measured: issue 50), or `billed` for the billed-only tenant reported beside it.
 */
const HOOK_EVENTS = process.env.BENCH_SYSTEM_EVENTS === 'billed' ? ['call.outbound.billed'] : undefined;
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

    // ---- (b) calls end to end ----
    const caller = await tenantSetUp(gw, { lines: 100, hook: `${receiver.base}/billed` }, receiver);
    let next = 0;
    // Numbers the simulator answers and talks 15–180 s (75–900 ms here), distinct across the run.
    const phone = () => {
      const n = next++;
      return `+1415${200 + (Math.floor(n / 9000) % 700)}${1000 + (n % 9000)}`;
    };
    const consent = { outboundCall: true, capturedAt: '2026-11-01T10:00:00Z' };
    const billedOf = (from: number) => receiver.at('/billed').slice(from);
    const callRounds: CallsRound[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      process.stdout.write(`(b) calls end to end, round ${round}: ${CALLS} call leads at once\n`);
      const seen = receiver.at('/billed').length;
      const ops0 = await sys.storeOps();
      const docs0 = await storeDocs();
      const flow0 = await kafkaFlow.snapshot();
      const cpu = cpuWindow(pids);
      const t0 = Date.now();
      if (round === 1) profiledFrom = monotonicUs();
      const { report } = await perfProfile(round === 1 ? infra.storePid : undefined, 'store-calls', async () => {
        const sent = await call(`${gw}/api/v1/leads/batch`, {
          key: caller.key,
          body: {
            campaignId: caller.campaignId,
            leads: Array.from({ length: CALLS }, () => ({ phone: phone(), channel: 'call', consent })),
          },
        });
        if (sent.status !== 200) throw new Error(`batch: ${sent.status} ${JSON.stringify(sent.body).slice(0, 300)}`);
        const until = Date.now() + 300_000;
        while (new Set(billedOf(seen).map((r) => r.id)).size < CALLS && Date.now() < until) await sleep(100);
      });
      if (report) process.stdout.write(`  the store's self time during round 1 (perf):\n${report}\n`);
      if (round === 1) profiledTo = monotonicUs();
      const received = unique(billedOf(seen));
      const seconds = (Math.max(...received.map((r) => r.at)) - t0) / 1000;
      await settled(caller.campaignId);
      const shares = cpu();
      const ops = perOperation(storeOpsDelta(ops0, await sys.storeOps()), received.length, 'call');
      const docs1 = await storeDocs();
      const docs = {
        inserted: (docs1.inserted - docs0.inserted) / received.length,
        updated: (docs1.updated - docs0.updated) / received.length,
        deleted: (docs1.deleted - docs0.deleted) / received.length,
      };
      // Consumers commit what they read a moment after it: the last of them settle first.
      await sleep(3_000);
      const kafka = flowPerOperation(flow0, await kafkaFlow.snapshot(), received.length);
      callRounds.push({
        calls: received.length,
        seconds,
        perSecond: received.length / seconds,
        billedLags: await billedLags(received),
        cpu: shares,
        ops,
        docs,
        kafka,
      });
      process.stdout.write(
        `  ${received.length} calls billed and announced in ${seconds.toFixed(1)} s: ${(received.length / seconds).toFixed(1)} calls/s\n  CPU per call ${cpuPerOperation(shares, received.length)}\n  store operations ${ops}\n  documents written per call ${docsText(docs)}\n  per call: ${kafka.text}\n`,
      );
    }

    // ---- (c) end of call → billed, at half the rate ----
    const half = callRounds[0]!.perSecond / 2;
    process.stdout.write(`(c) ${half.toFixed(1)} calls/s for ${PACED_S} s, leads paced\n`);
    const pacedFrom = receiver.at('/billed').length;
    const pacedSent = await pace(gw, caller, half, PACED_S, phone);
    const pacedUntil = Date.now() + 60_000;
    while (unique(billedOf(pacedFrom)).length < pacedSent && Date.now() < pacedUntil) await sleep(100);
    const paced = unique(billedOf(pacedFrom));
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
    const first = callRounds[0]!;
    const lastCalls = callRounds[ROUNDS - 1]!;
    const callRatio = first.perSecond / bare.rps;
    const cpuPerCall = cpuMsPerOperation(first.cpu, first.calls);
    const systemMsPerCall = total(cpuPerCall, OUTSIDE);
    const callInBare = systemMsPerCall / bare.cpuMsPerRequest;
    const ingestRatio = (r: IngestRound) => r.dialling.rps / r.paused.rps;
    const lastIngest = ingestRounds[ROUNDS - 1]!;
    const firstIngest = ingestRounds[0]!;
    const webhooksPerDelivery = cpuPerCall.webhooks ?? NaN;
    const table = perProcessTable([
      { label: 'per call (b, round 1)', ms: cpuPerCall },
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
| the same, rounds 1 → ${ROUNDS} | ${callRounds.map((r) => r.perSecond.toFixed(1)).join(' → ')} calls/s | run ${ROUNDS} ≥ 0.9 × run 1 | ${met(lastCalls.perSecond >= 0.9 * first.perSecond)} |
| end of call → \`call.outbound.billed\` received at ${half.toFixed(1)} calls/s (half of round 1), p99 | p50 ${pct(pacedLags, 50)} ms, **p99 ${pct(pacedLags, 99)} ms** (${paced.length} of ${pacedSent} calls) | < 1 s | ${met(paced.length === pacedSent && pct(pacedLags, 99) < 1000)} |
| accepted leads/s while the same tenant's backlog is dialled ÷ with telephony stopped, round 1 | ${firstIngest.dialling.rps.toFixed(0)} ÷ ${firstIngest.paused.rps.toFixed(0)} = **${ingestRatio(firstIngest).toFixed(2)}** (${(firstIngest.dialling.callsEnded / INGEST_S).toFixed(1)} calls/s ended meanwhile) | ≥ 0.7 | ${met(ingestRatio(firstIngest) >= 0.7)} |
| the same, rounds 1 → ${ROUNDS} | ${ingestRounds.map((r) => `${r.dialling.rps.toFixed(0)} ÷ ${r.paused.rps.toFixed(0)} = ${ingestRatio(r).toFixed(2)}`).join(' → ')} | run ${ROUNDS} ≥ 0.9 × run 1 | ${met(lastIngest.dialling.rps >= 0.9 * firstIngest.dialling.rps)} |
| CPU per call, every process of the system, in bare Express requests' worth of CPU | ${systemMsPerCall.toFixed(1)} ms = **${callInBare.toFixed(0)}** bare requests${Number.isFinite(BEFORE_CALL_IN_BARE_REQUESTS) ? ` (before issue 33: ${BEFORE_CALL_IN_BARE_REQUESTS.toFixed(0)})` : ''} | ≤ ⅓ of before | ${Number.isFinite(BEFORE_CALL_IN_BARE_REQUESTS) ? met(callInBare <= BEFORE_CALL_IN_BARE_REQUESTS / 3) : 'no'} |

CPU milliseconds per business operation, each process (from /proc over the measured window; the load generator holds autocannon
and the tenant's webhook endpoint, and is not counted in the totals). A webhook delivery costs the webhooks service
${webhooksPerDelivery.toFixed(1)} ms per call in (b) (${HOOK_EVENTS ? 'one call.outbound.billed per call: the billed-only tenant' : 'an endpoint for every event type: status changes, the billed call, credit usage'}).

${table}

Store operations per call (b), round 1: ${first.ops}; round ${ROUNDS}: ${lastCalls.ops}.
Documents the store wrote per call (b, its own count: a bulk write is one operation above but many documents), rounds 1 → ${ROUNDS}: ${callRounds.map((r) => docsText(r.docs)).join(' → ')}.
Kafka per call (b), rounds 1 → ${ROUNDS}: events produced ${callRounds.map((r) => r.kafka.produced.toFixed(1)).join(' → ')} (target ≤ 4), deliveries ${callRounds.map((r) => r.kafka.delivered.toFixed(1)).join(' → ')} (target ≤ 8); round 1: ${first.kafka.text}.
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

/** A tenant with a key, credits, a campaign open all day and (`hook`) a webhook endpoint for `call.outbound.billed`. */
async function tenantSetUp(
  gw: string,
  opts: { lines?: number; hook?: string },
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
    const hook = await admin('/webhooks', { url: opts.hook, ...(HOOK_EVENTS && { events: HOOK_EVENTS }) });
    if (hook.status !== 201) throw new Error(`webhook registration: ${hook.status} ${JSON.stringify(hook.body)}`);
    receiver.secrets.set(new URL(opts.hook).pathname, [hook.body.webhook.secret]);
  }
  return { ...t, campaignId };
}

const unique = <T extends { id: string }>(xs: T[]) => [...new Map(xs.map((x) => [x.id, x])).values()];

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
