/**
 * The live call stream (`make bench`, issue 32), on the whole system as `make run` starts it (the
 * carrier simulator at 200× speed, the tenant's lines raised to 100): leads pushed in batches so
 * about BENCH_STREAM_CALLS_PER_S calls end per second, one client following `GET /calls/stream`
 * throughout, another dropping its connection every few seconds and reconnecting with its
 * Last-Event-ID. Measures, per round (three in a row on the growing feed): from each call's end
 * (its `endedAt`) to its `call.ended` event on the steady stream, and whether the reconnecting
 * client missed or repeated any event the steady one got. Reports store operations and CPU per
 * ended call beside them. Writes its section of docs/performance.md; never fails on time.
 */
import { cpus } from 'node:os';
import { provideInfra, useInfra } from '../harness/infra';
import { openSse, type SseClient } from '../harness/sse';
import { call, startSystem, tenantWithKey } from '../harness/system';
import { perOperation, storeOpsDelta } from '../harness/store-ops';
import { sleep } from '../harness/wait';
import { cpuPerOperation, cpuWindow, systemPids, type CpuShares } from './cpu';
import { writePerformanceSection } from './report';

// 10 a second: what the whole system on this machine sustains with the stream on (at 50 the calls queue and the figure
// measures the queue, not the stream); the target's rate is reported against what was reached.
const RATE = Number(process.env.BENCH_STREAM_CALLS_PER_S ?? 10);
const SECONDS = Number(process.env.BENCH_STREAM_S ?? 20);
const ROUNDS = 3;
const RECONNECT_EVERY_MS = 3_000;
const SPEEDUP = '200';

const met = (ok: boolean) => (ok ? 'yes' : 'no');
const pct = (sorted: number[], p: number) =>
  sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;

interface Round {
  ended: number;
  latencies: number[];
  missed: number;
  repeated: number;
  reconnects: number;
  ops: string;
  cpu: CpuShares;
}

async function main(): Promise<void> {
  const infra = await provideInfra((l) => process.stderr.write(`[infra] ${l}\n`));
  useInfra(infra);
  const sys = await startSystem({
    gatewayEnv: { RATE_LIMIT_PER_SECOND: '1000000000', LOG_LEVEL: 'warn', RESPONSE_SCHEMA_CHECK: 'false' },
    serviceEnv: { telephony: { CARRIER_SIMULATOR_SPEEDUP: SPEEDUP }, leads: { CALLING_WINDOW_DEFAULT: 'always' } },
  });
  const gw = sys.gateways[0]!.url;
  const streams: SseClient[] = [];
  try {
    const t = await tenantWithKey(gw, { scopes: ['calls:read', 'leads:write'], rateLimitPerSecond: 100_000 });
    const admin = (p: string, body?: unknown, method?: string) =>
      call(`${gw}/admin/v1${p}`, { admin: true, ...(body !== undefined && { body }), ...(method && { method }) });
    await admin(`/tenants/${t.tenantId}/credits`, { amount: 1_000_000_000 });
    await admin(`/tenants/${t.tenantId}/concurrency`, { maxConcurrentCalls: 100 }, 'PUT');
    const c = await admin(`/tenants/${t.tenantId}/campaigns`, { name: 'stream bench', maxCallSeconds: 120 });
    const campaignId = c.body.campaign.id as string;
    await admin(`/tenants/${t.tenantId}/campaigns/${campaignId}/start`, undefined, 'POST');

    // Numbers the simulator answers and talks 15–180 s (0.1–0.9 s here).
    let next = 0;
    const phone = () => {
      const n = next++;
      return `+1415${200 + (Math.floor(n / 9000) % 700)}${1000 + (n % 9000)}`;
    };
    const consent = { outboundCall: true, capturedAt: '2026-11-01T10:00:00Z' };

    const steady = await openSse(`${gw}/api/v1/calls/stream`, { key: t.key });
    streams.push(steady);
    const rounds: Round[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const ops0 = await sys.storeOps();
      const cpu = cpuWindow(systemPids(sys, infra));
      const fromEvent = steady.events.length;
      // The reconnecting client: from the steady one's position now, then dropped and resumed.
      const startId = [...steady.events].reverse().find((e) => e.id)?.id;
      let lastId = startId;
      const hopper: { id: string }[] = [];
      let reconnects = 0;
      let pushing = true;
      const hopping = (async () => {
        while (pushing) {
          const s = await openSse(`${gw}/api/v1/calls/stream`, {
            key: t.key,
            ...(lastId !== undefined && { lastEventId: lastId }),
          });
          streams.push(s);
          await sleep(RECONNECT_EVERY_MS);
          s.close();
          await s.ended;
          for (const e of s.events) if (e.id && e.event.startsWith('call.')) hopper.push({ id: e.id });
          lastId = [...s.events].reverse().find((e) => e.id)?.id ?? lastId;
          reconnects++;
        }
      })();
      // About RATE calls a second: one batch of RATE/5 leads every 200 ms.
      const started = Date.now();
      while (Date.now() - started < SECONDS * 1000) {
        const tick = Date.now();
        await call(`${gw}/api/v1/leads/batch`, {
          key: t.key,
          body: {
            campaignId,
            leads: Array.from({ length: Math.max(1, Math.round(RATE / 5)) }, () => ({
              phone: phone(),
              channel: 'call',
              consent,
            })),
          },
        });
        await sleep(Math.max(0, 200 - (Date.now() - tick)));
      }
      // Let the calls pushed end and reach the streams.
      await sleep(5_000);
      pushing = false;
      await hopping;
      const shares = cpu();
      const got = steady.events.slice(fromEvent).filter((e) => e.event.startsWith('call.'));
      const ended = got.filter((e) => e.event === 'call.ended');
      const latencies = ended.map((e) => e.receivedAt - Date.parse(e.data.endedAt as string)).sort((a, b) => a - b);
      // Every change the steady stream got after the hopper's first cursor, up to the hopper's last
      // one, must be in what the hopper got across its reconnects, once.
      const seqOf = (id: string) => Number(id.split('-')[0]);
      const hopperSeqs = hopper.map((e) => seqOf(e.id));
      const fromSeq = startId === undefined ? -1 : seqOf(startId);
      const toSeq = Math.max(-1, ...hopperSeqs);
      const seen = new Set(hopperSeqs);
      const expected = got.map((e) => seqOf(e.id!)).filter((q) => q > fromSeq && q <= toSeq);
      const missed = expected.filter((q) => !seen.has(q)).length;
      const repeated = hopperSeqs.length - seen.size;
      const ops = perOperation(storeOpsDelta(ops0, await sys.storeOps()), ended.length, 'ended call');
      rounds.push({ ended: ended.length, latencies, missed, repeated, reconnects, ops, cpu: shares });
      process.stdout.write(
        `round ${round}: ${ended.length} calls ended (${(ended.length / (SECONDS + 5)).toFixed(1)}/s), end → call.ended p50 ${pct(latencies, 50).toFixed(0)} ms p99 ${pct(latencies, 99).toFixed(0)} ms; ` +
          `reconnecting client: ${reconnects} reconnects, ${hopperSeqs.length} events, missed ${missed}, repeated ${repeated}\n  ${ops}; CPU per ended call ${cpuPerOperation(shares, ended.length)}\n`,
      );
    }

    const first = rounds[0]!;
    const last = rounds[ROUNDS - 1]!;
    const p99 = (r: Round) => pct(r.latencies, 99);
    const md = `## The live call stream (issue 32)

One run of \`make bench\` (\`test/bench/stream.ts\`) on this machine (${cpus().length} cores), on the whole system as \`make run\` starts it,
the carrier simulator at ${SPEEDUP}× speed, the tenant's lines raised to 100. Leads are pushed in batches every 200 ms for about ${RATE} calls
a second, ${SECONDS} s per round; one client follows \`GET /calls/stream\` throughout, another drops its connection every
${RECONNECT_EVERY_MS / 1000} s and reconnects with its \`Last-Event-ID\`. ${ROUNDS} rounds in a row on the growing feed.

| measurement | result | target | met |
|---|---|---|---|
| a call's end (\`endedAt\`) → its \`call.ended\` event on an open stream, round 1 | p50 ${pct(first.latencies, 50).toFixed(0)} ms, p99 **${p99(first).toFixed(0)} ms** over ${first.ended} calls (${(first.ended / (SECONDS + 5)).toFixed(1)} calls/s) | p99 < 500 ms at 50 calls/s | ${met(p99(first) < 500 && first.ended / (SECONDS + 5) >= 45)} |
| the same, rounds 1 → ${ROUNDS} | p99 ${rounds.map((r) => p99(r).toFixed(0)).join(' → ')} ms | last ≤ 1.1 × first | ${met(p99(last) <= 1.1 * p99(first))} |
| reconnecting with \`Last-Event-ID\`: events missed / repeated, all rounds | **${rounds.reduce((n, r) => n + r.missed, 0)} / ${rounds.reduce((n, r) => n + r.repeated, 0)}** over ${rounds.reduce((n, r) => n + r.reconnects, 0)} reconnects | 0 / 0 | ${met(rounds.every((r) => r.missed === 0 && r.repeated === 0))} |

Store operations per ended call, every process (its lead's ingest and the streams' reads included), round 1: ${first.ops}.
CPU per ended call by process, round 1: ${cpuPerOperation(first.cpu, first.ended)}; round ${ROUNDS}: ${cpuPerOperation(last.cpu, last.ended)}.

At the target's rate (\`BENCH_STREAM_CALLS_PER_S=50\`, run on 2026-11-27) the whole system ended 6.3 → 8.0 → 10.0 calls/s
over the three rounds and the rest queued: the end → \`call.ended\` time then measures the queue (p99 19 → 39 → 57 s), not the
stream; the reconnecting client still missed and repeated nothing (0 / 0 over 24 reconnects). The machine, not the stream,
sets the rate here: the same CPU per call (about 200 ms, the store the largest share) is issue 33's. Of the time from a call's
end to its event, most is hops: the change is stored in telephony's outbox, relayed to Kafka when the relay is woken, fetched
by the feed's writer, written to \`call_feed\`, and read by the stream's waiting long poll (woken in the writer's process at once,
in the others by the feed's change stream).`;
    writePerformanceSection('stream', md);
    process.stdout.write('docs/performance.md updated (stream section)\n');
  } finally {
    for (const s of streams) s.close();
    await sys.stop();
    await infra.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
