/**
 * What one store operation costs the store, and why it costs more inside the system than alone
 * (`make bench`, issue 33). The embedded store as `make run` starts it (`--sync-on-commit`), alone on
 * the machine, the mongodb driver with 32 operations in flight; for each case the store's CPU
 * milliseconds per operation (/proc) and operations per second:
 *   - inserts and updates by `_id`, with no change stream open, then with as many as the system
 *     keeps open (STREAMS, each on a collection of its own database, waiting as the kit's do), then
 *     with one of them on the written collection;
 *   - the same inserts ten to a write (`insertMany`);
 *   - the open streams alone, nothing written: what waiting costs per second.
 * Writes its section of docs/performance.md. It reports; it never fails on time.
 */
import { mkdtempSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import path from 'node:path';
import { mongo } from 'mongoose';
import { startStore } from '@voiceapi/local-infra';
import { cpuSeconds } from './cpu';
import { writePerformanceSection } from './report';
import { sleep } from '../harness/wait';

const SECONDS = Number(process.env.BENCH_STORE_COST_S ?? 4);
const IN_FLIGHT = 32;
/** As many change streams as the whole system keeps open while calls run (decision 0141: one per process that watches). */
const STREAMS = Number(process.env.BENCH_STORE_COST_STREAMS ?? 2);

interface Measured {
  perSecond: number;
  cpuMsPerOp: number;
}

async function main(): Promise<void> {
  const store = await startStore({ dataDir: mkdtempSync(path.join(tmpdir(), 'store-cost-')) });
  const client = await new mongo.MongoClient(store.url, { maxPoolSize: IN_FLIGHT + STREAMS + 4 }).connect();
  const rows: string[] = [];
  try {
    const db = client.db('cost');
    let n = 0;
    /** Runs `op` with IN_FLIGHT in flight for SECONDS: operations per second and the store's CPU per operation. */
    const measure = async (op: (i: number) => Promise<unknown>, perCall = 1): Promise<Measured> => {
      let stop = false;
      let done = 0;
      const cpu0 = cpuSeconds(store.pid);
      const t0 = performance.now();
      await Promise.all(
        Array.from({ length: IN_FLIGHT }, async () => {
          while (!stop) {
            await op(n++);
            done += perCall;
            if (performance.now() - t0 > SECONDS * 1000) stop = true;
          }
        }),
      );
      const seconds = (performance.now() - t0) / 1000;
      return { perSecond: done / seconds, cpuMsPerOp: ((cpuSeconds(store.pid) - cpu0) * 1000) / done };
    };
    const docs = db.collection<{ _id: number; tenantId: string; at: Date; n: number }>('docs');
    await docs.createIndex({ tenantId: 1, at: -1 });
    const insert = (i: number) => docs.insertOne({ _id: i, tenantId: `t${i % 10}`, at: new Date(), n: 0 });
    const update = (i: number) => docs.updateOne({ _id: i % 10_000 }, { $inc: { n: 1 }, $set: { at: new Date() } });
    const insertTen = (i: number) =>
      docs.insertMany(
        Array.from({ length: 10 }, (_, j) => ({
          _id: 10_000_000 + i * 10 + j,
          tenantId: `t${i % 10}`,
          at: new Date(),
          n: 0,
        })),
      );
    const streams: mongo.ChangeStream[] = [];
    const open = async (coll: { watch: mongo.Collection['watch'] }) => {
      // As the kit's ChangeFeed watches: a $match on the operation, the fact of a change only.
      const s = coll.watch(
        [{ $match: { operationType: { $in: ['insert', 'update'] } } }, { $project: { operationType: 1 } }],
        { maxAwaitTimeMS: 30_000 },
      );
      s.on('change', () => undefined);
      s.on('error', () => undefined);
      streams.push(s);
      await sleep(50);
    };
    const closeAll = async () => {
      for (const s of streams.splice(0)) await s.close();
    };
    const row = (what: string, m: Measured, base?: Measured) =>
      rows.push(
        `| ${what} | ${m.perSecond.toFixed(0)} | **${m.cpuMsPerOp.toFixed(3)}** | ${base ? `${(m.cpuMsPerOp / base.cpuMsPerOp).toFixed(2)} ×` : ''} |`,
      );

    await measure(insert); // warm-up, and the 10,000 documents the updates touch
    const insert0 = await measure(insert);
    const update0 = await measure(update);
    const ten0 = await measure(insertTen, 10);
    row('insert, no change stream open', insert0);
    row('update by `_id`, no change stream open', update0);
    row('insert, ten to an `insertMany`, per document', ten0, insert0);

    for (let i = 0; i < STREAMS; i++) await open(client.db(`other_${i}`).collection('watched'));
    const idleCpu0 = cpuSeconds(store.pid);
    await sleep(SECONDS * 1000);
    const idleMsPerS = ((cpuSeconds(store.pid) - idleCpu0) * 1000) / SECONDS;
    const insertN = await measure(insert);
    const updateN = await measure(update);
    row(`insert, ${STREAMS} change streams open on other databases`, insertN, insert0);
    row(`update by \`_id\`, ${STREAMS} change streams open on other databases`, updateN, update0);
    await open(docs);
    const insertSame = await measure(insert);
    row(`insert, ${STREAMS} on other databases and one on the written collection`, insertSame, insert0);
    await closeAll();
    const insertAfter = await measure(insert);
    row('insert, the streams closed again', insertAfter, insert0);

    const md = `## The store's cost per operation (issue 33)

One run of \`make bench\` (\`test/bench/store-cost.ts\`) on this machine (${cpus().length} cores): the embedded store as \`make run\`
starts it (SecantusDB's Rust server, \`--sync-on-commit\`), alone, the mongodb driver with ${IN_FLIGHT} operations in flight for
${SECONDS} s per case. The store's CPU per operation from /proc.

| case | operations/s | store CPU ms per operation | ÷ the case without |
|---|---|---|---|
${rows.join('\n')}

${STREAMS} change streams open and nothing written cost the store **${idleMsPerS.toFixed(1)} ms of CPU per second**.`;
    writePerformanceSection('store_cost', md);
    process.stdout.write(`${md}\n`);
  } finally {
    await client.close(true);
    await store.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
