/**
 * Recordings in object storage (`make bench`, issue 49). The system as `make run` starts it (every
 * process, the store, Kafka, the object store; the carrier at 200×), run twice in one go: first
 * from BEFORE, the last commit before object storage (built beside this checkout), then from this
 * checkout, so before and after are measured on the same machine minutes apart. For each, three
 * rounds on growing data:
 *   - CALLS inbound calls of 10 minutes at once (a tenant with 1,000 lines): telephony's resident
 *     memory sampled from the first ring until every call is billed and says it has its recording
 *     (the system quiet), its peak over idle; telephony's CPU and the store's documents per call;
 *   - the operational store's bytes and documents for recordings per answered call so far (the
 *     `recordings` and `recording_parts` collections, and the call row's `recording` description);
 *   - one 3-minute call's recording through the tenant's signed link: whole, and one byte range.
 * Writes its section of docs/performance.md. It reports; it never fails on time.
 */
import mongoose from 'mongoose';
import { provideInfra, useInfra } from '../harness/infra';
import { releaseBuild } from '../harness/release-build';
import { call, startSystem, tenantWithKey, type System } from '../harness/system';
import { loadManifest } from '@voiceapi/local-infra';
import { cpuSeconds, rssBytes } from './cpu';
import { writePerformanceSection } from './report';

/** The last commit before object storage: recordings as 1 MiB parts in the operational store, 2 s of audio each. */
const BEFORE = process.env.BENCH_RECORDINGS_BEFORE ?? '6795b96b50ac38115c8d0bc9c6462b67c54f8ab4';
const CALLS = Number(process.env.BENCH_RECORDING_CALLS ?? 100);
const CALL_SECONDS = 600;
const ROUNDS = 3;
const MB = 1024 * 1024;
/** 8 kHz, 16-bit mono WAV: its header and 16,000 bytes a second. */
const wavOf = (seconds: number) => 44 + seconds * 16_000;

interface Round {
  idleMb: number;
  peakMb: number;
  peakOverIdleMb: number;
  /** Resident a second after the round's calls were all recorded: what stays. */
  idleAfterMb: number;
  seconds: number;
  cpuMsPerCall: number;
  docsPerCall: number;
  /** The operational store's bytes for recordings per answered call so far (parts, headers, descriptions). */
  storeBytesPerCall: number;
  /** Documents of their own (`recordings`, `recording_parts`) per answered call so far. */
  recordingDocsPerCall: number;
  threeMinute: { bytes: number; wholeMs: number; rangeStatus: number; rangeBytes: number; riff: boolean };
}

async function measure(label: string, root: string | undefined): Promise<Round[]> {
  const builds = root ? Object.fromEntries(loadManifest().processes.map((p) => [p.name, root])) : {};
  const sys = await startSystem({
    builds,
    gatewayEnv: { RATE_LIMIT_PER_SECOND: '1000000000', LOG_LEVEL: 'warn', RESPONSE_SCHEMA_CHECK: 'false' },
    serviceEnv: { telephony: { CARRIER_SIMULATOR_SPEEDUP: '200' } },
  });
  const gw = sys.gateways[0]!.url;
  const telephonyDb = await mongoose
    .createConnection(sys.env.MONGO_URL!, { dbName: sys.gatewayDb.replace(/^gateway_/, 'telephony_') })
    .asPromise();
  try {
    return await rounds(label, sys, gw, telephonyDb);
  } finally {
    await telephonyDb.close();
    await sys.stop();
  }
}

async function rounds(label: string, sys: System, gw: string, db: mongoose.Connection): Promise<Round[]> {
  const admin = (p: string, body?: unknown, method?: string) =>
    call(`${gw}/admin/v1${p}`, { admin: true, ...(body !== undefined && { body }), ...(method && { method }) });
  const t = await tenantWithKey(gw, { scopes: ['calls:read', 'recordings:read'], rateLimitPerSecond: 100_000 });
  await admin(`/tenants/${t.tenantId}/credits`, { amount: 10_000_000 });
  // Lines for every call of a round: the bench measures recording, not the package.
  await admin(`/tenants/${t.tenantId}/concurrency`, { maxConcurrentCalls: 1_000 }, 'PUT');
  const toNumber = `+1628557${String(1000 + Math.floor(Math.random() * 8999))}`;
  const bought = await admin(`/tenants/${t.tenantId}/numbers`, { phoneNumber: toNumber, countryIso: 'US' });
  if (bought.status !== 201) throw new Error(`number: ${bought.status} ${JSON.stringify(bought.body)}`);
  const calls = db.collection('calls');
  const ring = async (durationSeconds: number, i: number): Promise<string> => {
    const r = await admin(`/tenants/${t.tenantId}/simulate/inbound-call`, {
      toNumber,
      fromNumber: `+1415556${String(1000 + (i % 9000))}`,
      durationSeconds,
    });
    if (r.status !== 202) throw new Error(`inbound call: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body.callId as string;
  };
  /** Until every call is billed and says it has its recording (stored): the system is quiet then. */
  const done = async (ids: string[], timeoutMs: number) => {
    const until = Date.now() + timeoutMs;
    const finished = () =>
      calls.countDocuments({ _id: { $in: ids as never[] }, billingStatus: { $ne: 'pending' }, hasRecording: true });
    while ((await finished()) < ids.length) {
      if (Date.now() > until) throw new Error(`${label}: ${await finished()} of ${ids.length} calls recorded`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  const storeDocs = async () => {
    const { metrics } = (await db.db!.admin().command({ serverStatus: 1 })) as {
      metrics?: { document?: { inserted?: number; updated?: number; deleted?: number } };
    };
    const d = metrics?.document ?? {};
    return (d.inserted ?? NaN) + (d.updated ?? NaN) + (d.deleted ?? NaN);
  };
  const bytesOf = async (collection: string, field = '$$ROOT') =>
    (
      await db
        .collection(collection)
        .aggregate<{ n: number }>([
          { $match: field === '$$ROOT' ? {} : { [field.slice(1)]: { $exists: true } } },
          { $group: { _id: null, n: { $sum: { $bsonSize: field } } } },
        ])
        .toArray()
    )[0]?.n ?? 0;
  const pid = sys.services.telephony!.child.pid!;
  const out: Round[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    const idle = rssBytes(pid);
    let peak = idle;
    const sampler = setInterval(() => (peak = Math.max(peak, rssBytes(pid))), 20);
    const cpu0 = cpuSeconds(pid);
    const docs0 = await storeDocs();
    const t0 = performance.now();
    const ids = await Promise.all(Array.from({ length: CALLS }, (_, i) => ring(CALL_SECONDS, i)));
    await done(ids, 600_000);
    const seconds = (performance.now() - t0) / 1000;
    clearInterval(sampler);
    const cpuMsPerCall = ((cpuSeconds(pid) - cpu0) * 1000) / CALLS;
    const docsPerCall = ((await storeDocs()) - docs0) / CALLS;
    await new Promise((r) => setTimeout(r, 1_000));
    const idleAfter = rssBytes(pid);

    const answered = await calls.countDocuments({ tenantId: t.tenantId, hasRecording: true });
    const legacyDocs =
      (await db.collection('recordings').countDocuments({})) +
      (await db.collection('recording_parts').countDocuments({}));
    const storeBytes =
      (await bytesOf('recordings')) + (await bytesOf('recording_parts')) + (await bytesOf('calls', '$recording'));

    // One 3-minute call, fetched by the tenant through its signed link: whole, then one range.
    const id = await ring(180, 9_999);
    await done([id], 120_000);
    const link = await call(`${gw}/api/v1/calls/${id}/recording`, { key: t.key });
    if (link.status !== 200) throw new Error(`recording link: ${link.status} ${JSON.stringify(link.body)}`);
    const url = new URL(link.body.url as string, gw).toString();
    const w0 = performance.now();
    const whole = Buffer.from(await (await fetch(url)).arrayBuffer());
    const wholeMs = performance.now() - w0;
    const part = await fetch(url, { headers: { Range: 'bytes=1048576-1049599' } });
    const partBytes = (await part.arrayBuffer()).byteLength;

    const r: Round = {
      idleMb: idle / MB,
      peakMb: peak / MB,
      peakOverIdleMb: (peak - idle) / MB,
      idleAfterMb: idleAfter / MB,
      seconds,
      cpuMsPerCall,
      docsPerCall,
      storeBytesPerCall: storeBytes / answered,
      recordingDocsPerCall: legacyDocs / answered,
      threeMinute: {
        bytes: whole.length,
        wholeMs,
        rangeStatus: part.status,
        rangeBytes: partBytes,
        riff: whole.toString('ascii', 0, 4) === 'RIFF',
      },
    };
    out.push(r);
    process.stdout.write(`${label} round ${round}: ${JSON.stringify(r)}\n`);
  }
  return out;
}

async function main(): Promise<void> {
  const infra = await provideInfra((l) => process.stderr.write(`[infra] ${l}\n`));
  useInfra(infra);
  try {
    const before = await measure('before', releaseBuild(BEFORE));
    const after = await measure('after', undefined);
    report(before, after);
  } finally {
    await infra.stop();
  }
}

function report(before: Round[], after: Round[]): void {
  const met = (ok: boolean) => (ok ? 'yes' : 'no');
  const kb = (n: number) => `${(n / 1024).toFixed(1)} KB`;
  const last = (rs: Round[]) => rs.at(-1)!;
  const rows = (rs: Round[], label: string) =>
    rs
      .map(
        (r, i) =>
          `| ${label} | ${i + 1} | ${((i + 1) * CALLS).toLocaleString('en-US')} | ${r.seconds.toFixed(1)} s | ${r.idleMb.toFixed(0)} MB | ${r.peakMb.toFixed(0)} MB | **${r.peakOverIdleMb.toFixed(0)} MB** | ${r.idleAfterMb.toFixed(0)} MB | ${r.cpuMsPerCall.toFixed(1)} ms | ${r.docsPerCall.toFixed(1)} | ${kb(r.storeBytesPerCall)} | ${r.recordingDocsPerCall.toFixed(2)} | ${(r.threeMinute.bytes / 1e6).toFixed(2)} MB in ${r.threeMinute.wholeMs.toFixed(0)} ms; range ${r.threeMinute.rangeStatus}, ${r.threeMinute.rangeBytes} B |`,
      )
      .join('\n');
  const audio = (CALLS * wavOf(CALL_SECONDS)) / MB;
  const a = last(after);
  const b = last(before);
  // Flat: what a call holds while it records (the highest peak over the first idle, per call) is a
  // small part of its recording, never the recording; and what stays after a round does not grow
  // with the recordings made so far. (The peaks themselves move by the collector's slack: tens of MB.)
  const peaks = after.map((r) => r.peakMb);
  const stays = after.map((r) => r.idleAfterMb);
  const perCallMb = (Math.max(...peaks) - after[0]!.idleMb) / CALLS;
  const recordingMb = wavOf(CALL_SECONDS) / MB;
  const memoryFlat = perCallMb < recordingMb / 4 && stays.at(-1)! <= stays[0]! * 1.1;
  const threeMinuteOk =
    Math.abs(a.threeMinute.bytes - wavOf(180)) < 1_000 &&
    a.threeMinute.riff &&
    a.threeMinute.rangeStatus === 206 &&
    a.threeMinute.rangeBytes === 1024;
  writePerformanceSection(
    'recordings',
    `## Recordings in object storage (issue 49)

\`node --import tsx test/bench/recordings.ts\` (part of \`make bench\`), ${new Date().toISOString().slice(0, 10)}: the
whole system as \`make run\` starts it (the carrier simulator at 200×), measured twice in one run: **before**, every
process from ${BEFORE.slice(0, 7)} (the last commit before object storage: audio in the operational store in 1 MiB
parts, a 2-second tone per call), then **after**, from this checkout (audio in the object store, as long as the
call). Each round: ${CALLS} inbound calls of ${CALL_SECONDS / 60} minutes at once, until every one is billed and says it
has its recording; then one 3-minute call fetched through the tenant's signed link, whole and by \`Range\`.
Telephony's memory is its resident set sampled every 20 ms; CPU is telephony's; documents are the store's own count
(every database) per call; bytes and documents for recordings are over every answered call so far.

| build | round | calls so far | round took | telephony idle | peak | peak over idle | after the round | telephony CPU per call | documents written per call | store bytes for recordings per call | recording documents per call | 3-minute call through its link |
|---|---|---|---|---|---|---|---|---|---|---|---|---|
${rows(before, 'before')}
${rows(after, 'after')}

| measured | before | after | target | met |
|---|---|---|---|---|
| bytes in the operational store per answered call, for its recording | ${kb(b.storeBytesPerCall)} | ${a.storeBytesPerCall.toFixed(0)} B | < 2 KB (the description only) | ${met(a.storeBytesPerCall < 2048)} |
| a 3-minute call's recording through the signed link | ${(b.threeMinute.bytes / 1e6).toFixed(3)} MB | ${(a.threeMinute.bytes / 1e6).toFixed(3)} MB, \`Range\` ${a.threeMinute.rangeStatus} with ${a.threeMinute.rangeBytes} bytes | ~2.9 MB of audio, with \`Range\` support | ${met(threeMinuteOk)} |
| telephony's memory while ${CALLS} calls of ${CALL_SECONDS / 60} minutes record (${audio.toFixed(0)} MB of audio) | peak ${before.map((r) => r.peakMb.toFixed(0)).join(', ')} MB | peak ${peaks.map((p) => p.toFixed(0)).join(', ')} MB in rounds 1–${ROUNDS} (${perCallMb.toFixed(2)} MB per call recording, against ${recordingMb.toFixed(1)} MB per recording); after each round ${stays.map((p) => p.toFixed(0)).join(', ')} MB | flat: a call holds under a quarter of its recording, and what stays after a round grows under 10 % over the rounds | ${met(memoryFlat)} |
| documents written per call for its recording | ${b.recordingDocsPerCall.toFixed(2)} | ${a.recordingDocsPerCall.toFixed(2)} (its description rides on the call's end write) | ≤ 1 | ${met(a.recordingDocsPerCall <= 1)} |`,
  );
  process.stdout.write('recordings: written to docs/performance.md\n');
}

void main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
