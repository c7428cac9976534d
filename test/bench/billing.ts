// Over 300 lines because one benchmark scenario from start to report; its steps share one started system.
/**
 * Billing throughput (`make bench`), one run on this machine, billing as a real process against
 * the embedded store and Kafka. Measures:
 *   (a) ended calls charged per second (SettleCalls, as telephony asks it: 500 calls a request,
 *       16 requests in flight → outcome and ledger row), beside a bare
 *       bulk insert of as many ledger-sized rows into the same database; three rounds, on a ledger of
 *       10 k, 100 k and 1 M rows (other tenants' rows seeded before each: BENCH_LEDGER_ROWS);
 *   (b) end of call → ledger row latency at a steady 200 calls/s;
 *   (c) debit RPCs per second on one wallet, and across 100 wallets;
 *   (d) the largest ledger entry with 10 and with 1,000 calls held at once.
 * Writes its section of docs/performance.md. It reports; it never fails on time.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import path from 'node:path';
import mongoose from 'mongoose';
import { createPromiseClient, type CallContext } from '@voiceapi/kit/grpc';
import { voiceapi } from '@voiceapi/proto';
import { provideInfra } from '../harness/infra';
import { freePort, PROFILE_DIR, startProcess, waitFor } from '../harness/processes';
import { perOperation, readStoreOps, storeOpsDelta } from '../harness/store-ops';
import { sleep } from '../harness/wait';
import { summarizeProfiles } from './profiles';
import { cpuLine, cpuWindow } from './cpu';
import { writePerformanceSection } from './report';

const { TransactionType: T, CallDirection: D } = voiceapi.billing.v1;
/** Calls a settlement request carries, and requests in flight, in (a). */
const SETTLE_BATCH = 500;
const IN_FLIGHT = 16;
const CALLS = Number(process.env.BENCH_BILLING_CALLS ?? 10_000);
/** How many entries the wallets' ledger holds before each round of (a) (seeded rows of other tenants make up the difference). */
const LEDGER_ROWS = (process.env.BENCH_LEDGER_ROWS ?? '10000,100000,1000000').split(',').map(Number);
const ROUNDS = LEDGER_ROWS.length;
/** The seeded rows belong to this many other tenants (the charged tenants' chains stay their own). */
const SEEDED_TENANTS = 100;
const STEADY_S = Number(process.env.BENCH_DURATION_S ?? 10);
/** How billing writes wallet entries (decision 0137); (d) also measures the other format. */
const FORMAT = process.env.BENCH_WALLET_ENTRY_FORMAT === 'compat' ? 'compat' : 'fixed';
const OTHER_FORMAT = FORMAT === 'fixed' ? 'compat' : 'fixed';
const DEBIT_S = Number(process.env.BENCH_DURATION_S ?? 5);

/** The n-th seeded ledger row: another tenant's call deduction, shaped as billing writes them. */
function seededRow(n: number) {
  const tenantId = `bench-seeded-${n % SEEDED_TENANTS}`;
  const seq = Math.floor(n / SEEDED_TENANTS) + 1;
  const balance = 1_000_000_000 - 4 * seq;
  return {
    _id: `${tenantId}:${seq}`,
    tenantId,
    seq,
    kind: 'ledger',
    rowId: randomUUID(),
    type: 'call_deduction',
    amount: -4,
    balanceAfter: balance,
    reference: `call:seeded-${n}`,
    description: 'Outbound call, 2 min',
    callId: `seeded-${n}`,
    state: { balance, held: 0 },
    createdAt: new Date(),
    writer: 'bench-seed',
  };
}

const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))] ?? NaN;

async function main(): Promise<void> {
  const infra = await provideInfra((l) => process.stderr.write(`[infra] ${l}\n`));
  const db = `billing_bench_${randomBytes(4).toString('hex')}`;
  const port = await freePort();
  const opsFile = path.join(mkdtempSync(path.join(tmpdir(), 'billing-bench-')), 'billing.json');
  const billingEnv = (format: string, grpcPort: number) => ({
    MONGO_URL: infra.mongoUrl,
    KAFKA_BROKERS: infra.kafkaBrokers,
    MONGO_DB: db,
    GRPC_PORT: String(grpcPort),
    INSTANCE_ID: `bench-${randomUUID()}`,
    LOG_LEVEL: 'warn',
    WALLET_ENTRY_FORMAT: format,
  });
  const proc = startProcess('billing', 'services/billing/dist/main.js', {
    STORE_OPS_FILE: opsFile,
    ...billingEnv(FORMAT, port),
  });
  const billingClient = (grpcPort: number) =>
    createPromiseClient(voiceapi.billing.v1.BillingServiceService, `127.0.0.1:${grpcPort}`, { timeoutMs: 60_000 });
  /** Until a billing process answers its rate card. */
  const serving = (name: string, c: ReturnType<typeof billingClient>, p: typeof proc) =>
    waitFor(name, async () => (await c.getRateCard({}, { tenantId: 'probe', keyMode: 'live' }), true), 60_000, p);
  const conn = await mongoose.createConnection(infra.mongoUrl, { dbName: db }).asPromise();
  const client = billingClient(port);
  try {
    await serving('billing', client, proc);
    const tenants: CallContext[] = Array.from({ length: 10 }, () => ({
      tenantId: `bench-${randomUUID()}`,
      keyMode: 'live',
    }));
    for (const t of tenants) await client.topUp({ amount: 1_000_000_000, reference: 'bench-top-up' }, t);
    /** When each call ended, as its end says. */
    const endOf = new Map<string, number>();
    const ended = (callId: string, at = new Date()): voiceapi.billing.v1.EndedCall => (
      endOf.set(callId, at.getTime()),
      {
        callId,
        direction: D.CALL_DIRECTION_OUTBOUND,
        durationSeconds: 61,
        holdFailed: false,
        endTime: at,
      }
    );
    /** Calls billing answered settled (each answer is its outcome, decision 0139). */
    let settledCount = 0;
    /** Settles calls as telephony does: each tenant's in requests of at most SETTLE_BATCH, `inFlight` requests at once. */
    const settle = async (calls: { t: CallContext; call: voiceapi.billing.v1.EndedCall }[], inFlight: number) => {
      const requests = tenants.flatMap((t) => {
        const mine = calls.filter((c) => c.t === t).map((c) => c.call);
        return Array.from({ length: Math.ceil(mine.length / SETTLE_BATCH) }, (_, i) => ({
          t,
          calls: mine.slice(i * SETTLE_BATCH, (i + 1) * SETTLE_BATCH),
        }));
      });
      let next = 0;
      await Promise.all(
        Array.from({ length: inFlight }, async () => {
          while (next < requests.length) {
            const r = requests[next++]!;
            // Awaited before the sum: `settledCount += await …` would add to the count read before the wait.
            const { settlements } = await client.settleCalls({ calls: r.calls }, r.t);
            settledCount += settlements.length;
          }
        }),
      );
    };
    const outcomes = () => Promise.resolve(settledCount);
    const settledAll = async (what: string, n: number, timeoutMs: number) => {
      const until = Date.now() + timeoutMs;
      while ((await outcomes()) < n) {
        if (Date.now() > until || proc.child.exitCode !== null)
          throw new Error(`${what}: not done in time\n${proc.output()}`);
        await sleep(100);
      }
    };

    // (a) A backlog of ended calls, charged as fast as billing can: three rounds in a row, each
    // on the ledger the rounds before grew (the rate must not decline as it grows).
    process.stdout.write(
      `billing benchmark: ${ROUNDS} × ${CALLS} ended calls over ${tenants.length} tenants, ${cpus().length} cores\n`,
    );
    const storeOps = () => readStoreOps([{ name: 'billing', pid: proc.child.pid, file: opsFile }]);
    const rounds: { perS: number; ops: string; ledgerBefore: number; cpu: string }[] = [];
    const entries = conn.collection('wallet_entries');
    let seeded = 0;
    for (let round = 0; round < ROUNDS; round++) {
      // Grow the ledger to this round's size with other tenants' rows, as billing writes them.
      const missing = LEDGER_ROWS[round]! - (await entries.estimatedDocumentCount());
      const seedStart = Date.now();
      // Chunks of 1,000 rows, four in flight.
      for (let from = 0; from < missing; from += 4_000) {
        const chunks = [0, 1_000, 2_000, 3_000].map((at) => from + at).filter((at) => at < missing);
        await Promise.all(
          chunks.map((at) =>
            entries.insertMany(
              Array.from({ length: Math.min(1_000, missing - at) }, (_, k) => seededRow(seeded + at + k)) as never[],
              { ordered: false },
            ),
          ),
        );
      }
      if (missing > 0) {
        seeded += missing;
        process.stdout.write(
          `  (a) ledger grown by ${missing} rows of ${SEEDED_TENANTS} other tenants in ${((Date.now() - seedStart) / 1000).toFixed(0)} s\n`,
        );
      }
      const ledgerBefore = await entries.estimatedDocumentCount();
      const calls = Array.from({ length: CALLS }, (_, i) => ({
        t: tenants[i % tenants.length]!,
        call: ended(`bench-a-${round}-${i}-${randomBytes(3).toString('hex')}`),
      }));
      const ops0 = await storeOps();
      const cpu = cpuWindow({
        billing: proc.child.pid,
        'the store': infra.storePid,
        Kafka: infra.kafkaPid,
        'the load generator': process.pid,
      });
      const start = Date.now();
      await settle(calls, IN_FLIGHT);
      await settledAll('backlog charged', CALLS * (round + 1), 30 * 60_000);
      rounds.push({
        perS: CALLS / ((Date.now() - start) / 1000),
        ops: perOperation(storeOpsDelta(ops0, await storeOps()), CALLS, 'charge'),
        ledgerBefore,
        cpu: cpuLine(cpu()),
      });
      process.stdout.write(
        `  (a) round ${round + 1}: ${rounds[round]!.perS.toFixed(0)} calls charged/s; store operations ${rounds[round]!.ops}; ${rounds[round]!.cpu}\n`,
      );
    }
    const chargedPerS = rounds[0]!.perS;
    const opsPerCharge = rounds[0]!.ops;
    const decline = rounds[rounds.length - 1]!.perS / rounds[0]!.perS;
    // Baseline: the same number of ledger-sized documents, bulk-inserted into the same database.
    const rows = Array.from({ length: CALLS }, (_, i) => ({
      _id: `baseline:${i}`,
      tenantId: tenants[0]!.tenantId,
      seq: i + 1,
      kind: 'ledger',
      rowId: randomUUID(),
      type: 'call_deduction',
      amount: -4,
      balanceAfter: 1_000_000_000 - 4 * (i + 1),
      reference: `call:baseline-${i}`,
      description: 'Outbound call, 2 min',
      callId: `baseline-${i}`,
      createdAt: new Date(),
    }));
    const startBase = Date.now();
    for (let i = 0; i < rows.length; i += 500)
      await conn.collection('baseline_rows').insertMany(rows.slice(i, i + 500) as never[]);
    const baselinePerS = CALLS / ((Date.now() - startBase) / 1000);
    process.stdout.write(`  (a) bare bulk insert ${baselinePerS.toFixed(0)} rows/s\n`);

    // (b) A steady 200 calls/s; latency from the end of the call to its ledger row.
    const steady: string[] = [];
    const startB = Date.now();
    const ticks: Promise<void>[] = [];
    for (let tick = 0; tick < STEADY_S * 10; tick++) {
      const batch = Array.from({ length: 20 }, (_, i) => {
        const id = `bench-b-${tick}-${i}-${randomBytes(3).toString('hex')}`;
        steady.push(id);
        return { t: tenants[(tick * 20 + i) % tenants.length]!, call: ended(id) };
      });
      // As calls end: each tick's calls settled at once, while earlier ticks' may still be under way.
      ticks.push(settle(batch, batch.length));
      await sleep(Math.max(0, startB + (tick + 1) * 100 - Date.now()));
    }
    await Promise.all(ticks);
    await settledAll('steady calls charged', ROUNDS * CALLS + steady.length, 10 * 60_000);
    const docs = await conn
      .collection('wallet_entries')
      .find({ kind: 'ledger', callId: { $regex: '^bench-b-' } }, { projection: { callId: 1, createdAt: 1 } })
      .toArray();
    const lags = docs
      .map((d) => (d.createdAt as Date).getTime() - endOf.get(d.callId as string)!)
      .filter((x) => Number.isFinite(x));
    process.stdout.write(
      `  (b) end → ledger row at 200 calls/s: p50 ${pct(lags, 50)} ms, p99 ${pct(lags, 99)} ms (${lags.length} calls)\n`,
    );

    // (c) Debit RPCs, 64 in flight, on one wallet and spread over 100.
    const debits = async (wallets: CallContext[]) => {
      for (const w of wallets) await client.topUp({ amount: 1_000_000_000, reference: 'bench-debit-top-up' }, w);
      let done = 0;
      const until = Date.now() + DEBIT_S * 1000;
      await Promise.all(
        Array.from({ length: 64 }, async (_, worker) => {
          for (let n = 0; Date.now() < until; n++) {
            await client.debit(
              { reference: `d-${worker}-${n}`, amount: 1, type: T.TRANSACTION_TYPE_ADJUSTMENT, description: 'bench' },
              wallets[(worker + n) % wallets.length]!,
            );
            done++;
          }
        }),
      );
      return done / DEBIT_S;
    };
    const oneWallet = await debits([{ tenantId: `bench-one-${randomUUID()}`, keyMode: 'live' }]);
    const hundred = await debits(
      Array.from({ length: 100 }, () => ({ tenantId: `bench-many-${randomUUID()}`, keyMode: 'live' as const })),
    );
    process.stdout.write(`  (c) debits/s: one wallet ${oneWallet.toFixed(0)}, 100 wallets ${hundred.toFixed(0)}\n`);

    // (d) The largest ledger entry with n calls in flight: a wallet's n calls held (as telephony
    // asks, 500 a request), then all settled; its entries' sizes as the store keeps them (BSON).
    const largestEntry = async (inFlight: number, via = client) => {
      const t: CallContext = { tenantId: `bench-lines-${randomUUID()}`, keyMode: 'live' };
      await via.topUp({ amount: 1_000_000_000, reference: 'bench-lines-top-up' }, t);
      const ids = Array.from({ length: inFlight }, (_, i) => `bench-d-${inFlight}-${randomUUID().slice(0, 8)}-${i}`);
      for (let i = 0; i < ids.length; i += SETTLE_BATCH)
        await via.placeCallHolds(
          {
            holds: ids.slice(i, i + SETTLE_BATCH).map((callId) => ({
              callId,
              direction: D.CALL_DIRECTION_OUTBOUND,
              maxCallSeconds: 600,
              expireTime: new Date(Date.now() + 3_600_000),
            })),
          },
          t,
        );
      for (let i = 0; i < ids.length; i += SETTLE_BATCH)
        await via.settleCalls({ calls: ids.slice(i, i + SETTLE_BATCH).map((id) => ended(id)) }, t);
      const sizes = (await entries.find({ tenantId: t.tenantId }).toArray()).map((d) =>
        mongoose.mongo.BSON.calculateObjectSize(d),
      );
      return { entries: sizes.length, largestKb: Math.max(...sizes) / 1024 };
    };
    const fewLines = await largestEntry(10);
    const manyLines = await largestEntry(1_000);
    process.stdout.write(
      `  (d) largest ledger entry (${FORMAT}): ${fewLines.largestKb.toFixed(1)} KB with 10 calls in flight (${fewLines.entries} entries), ${manyLines.largestKb.toFixed(1)} KB with 1,000 (${manyLines.entries} entries)\n`,
    );
    // The other format, by a second billing process on the same store.
    const otherPort = await freePort();
    const other = startProcess('billing-other', 'services/billing/dist/main.js', billingEnv(OTHER_FORMAT, otherPort));
    const otherClient = billingClient(otherPort);
    let otherLines: { entries: number; largestKb: number };
    try {
      await serving('billing-other', otherClient, other);
      otherLines = await largestEntry(1_000, otherClient);
    } finally {
      otherClient.close();
      await other.stop();
    }
    process.stdout.write(`  (d) the same in ${OTHER_FORMAT}: ${otherLines.largestKb.toFixed(1)} KB with 1,000\n`);

    const met = (ok: boolean) => (ok ? 'yes' : 'no');
    writePerformanceSection(
      'billing',
      `## Billing

Run on ${new Date().toISOString().slice(0, 10)} with \`make bench\` (\`test/bench/billing.ts\`): billing as a real process, the
load generator in another, the embedded store (SecantusDB, decision 0110) and Kafka on the same ${cpus().length} cores;
wallet entries written in the \`${FORMAT}\` format (\`WALLET_ENTRY_FORMAT\`, decision 0137).

| measured | result | baseline | ratio | target | met |
|---|---|---|---|---|---|
| (a) ended calls charged per second (${CALLS} over ${tenants.length} tenants, settled ${SETTLE_BATCH} a request, ${IN_FLIGHT} requests in flight), first round | ${chargedPerS.toFixed(0)}/s | bulk insert of ${CALLS} ledger-sized rows: ${baselinePerS.toFixed(0)}/s | **${((100 * chargedPerS) / baselinePerS).toFixed(1)} %** | ≥ 5,000/s and ≥ 50 % | ${met(chargedPerS >= 5000 && chargedPerS >= baselinePerS / 2)} |
| (a) the same, rounds 1 → ${ROUNDS} on the growing ledger (${rounds.map((r) => `${r.ledgerBefore.toLocaleString('en')}`).join(', ')} wallet entries before each, other tenants' seeded) | ${rounds.map((r) => `${r.perS.toFixed(0)}/s`).join(' → ')} | | last ÷ first **${decline.toFixed(2)}** | ≥ 0.9 | ${met(decline >= 0.9)} |
| (a) store operations per charge, first round | ${opsPerCharge.split(' ')[0]} | | | ≤ 0.2 | ${met(Number(opsPerCharge.split(' ')[0]) <= 0.2)} |
| (b) end of call → ledger row at a steady 200 calls/s, on the ledger of (a)'s last round | p50 ${pct(lags, 50)} ms, p99 ${pct(lags, 99)} ms | | | p99 < 500 ms | ${met(pct(lags, 99) < 500)} |
| (c) debit RPCs per second, 64 in flight | one wallet ${oneWallet.toFixed(0)}/s; 100 wallets ${hundred.toFixed(0)}/s | | | (reported) | |
| (d) largest ledger entry (BSON) after 1,000 calls held at once and settled, \`${FORMAT}\` entries (issue 50) | ${manyLines.largestKb.toFixed(1)} KB (${manyLines.entries} entries) | 10 calls at once: ${fewLines.largestKb.toFixed(1)} KB (${fewLines.entries} entries); 1,000 in \`${OTHER_FORMAT}\`: ${otherLines.largestKb.toFixed(1)} KB | ${(manyLines.largestKb / fewLines.largestKb).toFixed(1)} × | < 2 KB, as at 10 | ${met(manyLines.largestKb < 2 && manyLines.largestKb <= fewLines.largestKb * 1.1)} |

Store operations per charge in (a), billing's own (kit \`StoreOpCounter\`), by round: ${rounds.map((r) => r.ops).join('; ')}.
Where the CPU went in (a)'s first round (/proc; the load generator sends the settlements in the same seconds): ${rounds[0]!.cpu}.
What a charge costs (decision 0050): its share of one look-up of the batch's references and of the wallet's
group-committed append (the entry posting \`call:<id>\` is the call's outcome, decision 0139); the calls of a request
(and the requests in flight together) are what these group. (d): in the \`compat\` format an entry lists the wallet's
open holds (decision 0050, as billing 1.2 reads it), about 110 bytes for each hold open when it is written; a
\`fixed\` entry carries its change and the figures after it, and a call's open hold is found by call id in the chain
(decision 0137). (b) is a queue building up whenever 200 calls/s is above what (a) sustains; its latency is then
mostly waiting.
`,
    );
    process.stdout.write('written to docs/performance.md\n');
  } finally {
    client.close();
    await conn.close();
    await proc.stop();
    await infra.stop();
  }
  if (process.env.BENCH_PROFILE) process.stdout.write(summarizeProfiles(PROFILE_DIR));
}

main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
