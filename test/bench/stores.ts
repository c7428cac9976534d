// Over 300 lines because one benchmark scenario from start to report; its steps share one started system.
/**
 * Store candidates side by side (`make bench`), every candidate in one run, each alone on the
 * machine while it is measured: FerretDB 1.24 (the former local store), SecantusDB's Python
 * server, SecantusDB's Rust server (the embedded store) without and with `--sync-on-commit` (what
 * `make run` and the tests use). Same Node client (the mongodb driver) for all, ledger-sized
 * documents of ten tenants with the index `{tenantId, createdAt}`, at three growing sizes
 * (BENCH_STORE_SIZES, default 10,000, 100,000 and 1,000,000 documents) so a path that slows as
 * data grows shows. Rows: racing conditional updates on one document (won / final), insertMany
 * rows/s, insertOne / point read / update by `_id` with 32 in flight, the newest 25 of one tenant,
 * and acknowledged writes lost to a SIGKILL under insert load. Writes its section of
 * docs/performance.md. It reports; it never fails on time.
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import path from 'node:path';
import { mongo } from 'mongoose';
import { freePorts, mongoReady, paths, spawnProcess, waitReady, type ManagedProcess } from '@voiceapi/local-infra';
import { ROOT } from '../harness/processes';
import { sleep } from '../harness/wait';
import { writePerformanceSection } from './report';

const SIZES = (process.env.BENCH_STORE_SIZES ?? '10000,100000,1000000').split(',').map(Number);
const SECONDS = Number(process.env.BENCH_STORE_SECONDS ?? 3);
const IN_FLIGHT = 32;
const TENANTS = 10;

interface Candidate {
  name: string;
  start(dataDir: string, port: number): ManagedProcess;
}

function candidates(): Candidate[] {
  const cache = execFileSync('bash', [path.join(ROOT, 'test/bench/stores/install-candidates.sh')], {
    stdio: ['ignore', 'pipe', 'inherit'],
  })
    .toString()
    .trim();
  const secantusConfig = (sync: boolean) => {
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'store-bench-conf-')), 'secantusd.toml');
    writeFileSync(
      file,
      `[server]\nhost = "127.0.0.1"\nlog_level = "WARNING"\n[storage]\ncache_size = "1G"\nsync_on_commit = ${sync}\n`,
    );
    return file;
  };
  const rust = (sync: boolean): Candidate => {
    const config = secantusConfig(sync);
    return {
      name: `SecantusDB Rust ${paths.storeVersion}${sync ? ', --sync-on-commit' : ''}`,
      start: (dataDir, port) =>
        spawnProcess('rust', paths.storeBin, ['--config', config, '--port', String(port), '--storage-path', dataDir], {
          cwd: dataDir,
        }),
    };
  };
  const pyConfig = path.join(mkdtempSync(path.join(tmpdir(), 'store-bench-conf-')), 'secantusd.toml');
  writeFileSync(pyConfig, '[server]\nhost = "127.0.0.1"\nlog_level = "WARNING"\n');
  return [
    {
      name: 'FerretDB 1.24 / SQLite',
      start: (dataDir, port) =>
        spawnProcess('ferretdb', path.join(cache, 'ferretdb-1.24', 'ferretdb'), [
          '-listen',
          `127.0.0.1:${port}`,
          '-data',
          dataDir,
          '-log-level',
          'error',
        ]),
    },
    {
      name: 'SecantusDB 0.7.0b3, Python server',
      start: (dataDir, port) =>
        spawnProcess(
          'python',
          path.join(cache, 'secantusdb-py-0.7.0b3', 'bin', 'secantusd-py'),
          ['--config', pyConfig, '--port', String(port), '--storage-path', dataDir],
          { cwd: dataDir },
        ),
    },
    rust(false),
    rust(true),
  ];
}

type Row = Map<string, string[]>; // candidate → one figure per size
const table = new Map<string, Row>();
const note = (row: string, candidate: string, figure: string) => {
  const r = table.get(row) ?? new Map<string, string[]>();
  table.set(row, r);
  r.set(candidate, [...(r.get(candidate) ?? []), figure]);
};

/** Runs `op` with `inFlight` callers for SECONDS (at least once each); operations per second. */
async function rate(op: () => Promise<unknown>, inFlight = IN_FLIGHT): Promise<number> {
  const until = Date.now() + SECONDS * 1000;
  let done = 0;
  const started = Date.now();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      do {
        await op();
        done++;
      } while (Date.now() < until);
    }),
  );
  return done / ((Date.now() - started) / 1000);
}

const ledgerRow = (i: number) => ({
  _id: `e-${i}`,
  tenantId: `tenant-${i % TENANTS}`,
  seq: i,
  type: i % 3 ? 'call_deduction' : 'top_up',
  amount: (i % 97) + 1,
  balance: 1_000_000 - i,
  reference: `call:${randomUUID()}`,
  description: 'Outbound call, 3 minutes',
  createdAt: new Date(Date.UTC(2026, 0, 1) + i * 1000),
});

async function measure(c: Candidate): Promise<void> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'store-bench-'));
  const [port] = await freePorts(1);
  const url = `mongodb://127.0.0.1:${port}/?directConnection=true`;
  let proc = c.start(dataDir, port!);
  await waitReady(proc, 'MongoDB ping', 120_000, () => mongoReady(url));
  let client = await new mongo.MongoClient(url, {
    maxPoolSize: IN_FLIGHT * 2,
    serverSelectionTimeoutMS: 30_000,
    socketTimeoutMS: 600_000,
  }).connect();
  try {
    const db = client.db('bench');
    const ledger = db.collection<ReturnType<typeof ledgerRow>>('ledger');
    await ledger.createIndex({ tenantId: 1, createdAt: -1 });
    let loaded = 0;
    let inserted = 0;
    for (const size of SIZES) {
      process.stderr.write(`[bench stores] ${c.name}: ${size} documents…\n`);
      const t0 = Date.now();
      while (loaded < size) {
        const n = Math.min(1000, size - loaded);
        await ledger.insertMany(
          Array.from({ length: n }, (_, k) => ledgerRow(loaded + k)),
          { ordered: false },
        );
        loaded += n;
      }
      note(
        '`insertMany`, 1,000-row batches, rows/s',
        c.name,
        Math.round((size - (SIZES[SIZES.indexOf(size) - 1] ?? 0)) / ((Date.now() - t0) / 1000)).toLocaleString('en-US'),
      );

      const racers = db.collection<{ _id: string; bal: number }>(`racers_${size}`);
      await racers.insertMany([
        { _id: 'fam', bal: 500 },
        { _id: 'upd', bal: 500 },
      ]);
      const fam = await Promise.all(
        Array.from({ length: 1000 }, () =>
          racers.findOneAndUpdate({ _id: 'fam', bal: { $gte: 1 } }, { $inc: { bal: -1 } }).catch(() => null),
        ),
      );
      note(
        '1,000 racing `findOneAndUpdate({_id, bal: {$gte: 1}}, {$inc: {bal: -1}})` on `bal: 500`: won / final',
        c.name,
        `${fam.filter(Boolean).length} / ${(await racers.findOne({ _id: 'fam' }))?.bal}`,
      );
      const upd = await Promise.all(
        Array.from({ length: 1000 }, () =>
          racers
            .updateOne({ _id: 'upd', bal: { $gte: 1 } }, { $inc: { bal: -1 } })
            .catch(() => ({ modifiedCount: 0, failed: true })),
        ),
      );
      const failed = upd.filter((r) => 'failed' in r).length;
      note(
        '1,000 racing conditional `updateOne`: won / final',
        c.name,
        `${upd.filter((r) => r.modifiedCount === 1).length} / ${(await racers.findOne({ _id: 'upd' }))?.bal}${failed ? ` (${failed} failed)` : ''}`,
      );

      // Their own ids: the load that follows fills e-<n> up to the next size.
      const inserts = await rate(() => ledger.insertOne({ ...ledgerRow(inserted), _id: `single-${inserted++}` }));
      note(`\`insertOne\`, ${IN_FLIGHT} in flight, /s`, c.name, Math.round(inserts).toLocaleString('en-US'));
      const reads = await rate(() => ledger.findOne({ _id: `e-${Math.floor(Math.random() * size)}` }));
      note(`point read by \`_id\`, ${IN_FLIGHT} in flight, /s`, c.name, Math.round(reads).toLocaleString('en-US'));
      let updateErrors = 0;
      const updates = await rate(() =>
        ledger
          .updateOne({ _id: `e-${Math.floor(Math.random() * size)}` }, { $inc: { amount: 1 } })
          .catch(() => updateErrors++),
      );
      note(
        `update by \`_id\`, ${IN_FLIGHT} in flight, /s`,
        c.name,
        updateErrors ? `fails (${updateErrors} errors)` : Math.round(updates).toLocaleString('en-US'),
      );
      const times: number[] = [];
      const until = Date.now() + SECONDS * 1000;
      do {
        const t = Date.now();
        await ledger.find({ tenantId: 'tenant-3' }).sort({ createdAt: -1 }).limit(25).toArray();
        times.push(Date.now() - t);
      } while (Date.now() < until);
      times.sort((a, b) => a - b);
      note(
        `newest 25 of one tenant (a tenth of the documents match), ms`,
        c.name,
        String(times[Math.floor(times.length / 2)]),
      );
    }

    // Acknowledged writes lost to a SIGKILL under insert load.
    const acknowledged: string[] = [];
    let stop = false;
    // Writes in flight at the kill give up within 2 s (the driver retries once, selecting a server).
    await client.close(true);
    client = await new mongo.MongoClient(url, { maxPoolSize: IN_FLIGHT, serverSelectionTimeoutMS: 2_000 }).connect();
    const crash = client.db('bench').collection<{ _id: string }>('crash');
    const writers = Array.from({ length: IN_FLIGHT }, async (_, w) => {
      for (let i = 0; !stop; i++) {
        try {
          await crash.insertOne({ _id: `${w}-${i}` });
          acknowledged.push(`${w}-${i}`);
        } catch {
          return;
        }
      }
    });
    await sleep(2_000);
    process.kill(proc.pid, 'SIGKILL');
    await proc.exited;
    stop = true;
    await Promise.all(writers);
    await client.close(true);
    proc = c.start(dataDir, port!);
    await waitReady(proc, 'MongoDB ping', 300_000, () => mongoReady(url));
    client = await new mongo.MongoClient(url, { serverSelectionTimeoutMS: 30_000, socketTimeoutMS: 600_000 }).connect();
    const present = new Set(
      (
        await client
          .db('bench')
          .collection<{ _id: string }>('crash')
          .find({}, { projection: { _id: 1 } })
          .toArray()
      ).map((d) => d._id),
    );
    const lost = acknowledged.filter((id) => !present.has(id)).length;
    note(
      'SIGKILL under insert load: acknowledged writes lost',
      c.name,
      `${lost} of ${acknowledged.length.toLocaleString('en-US')}`,
    );
  } finally {
    await client.close(true).catch(() => undefined); // teardown: the measurement is written, and a failed close must not hide an earlier error
    await proc.stop();
  }
}

/**
 * What counting store operations costs (kit StoreOpCounter turns the driver's command monitoring
 * on, which also decodes every reply once more): the same reads with monitoring on and off, on
 * the embedded store, interleaved over three rounds; the median of each.
 */
async function countingCost(c: Candidate): Promise<string> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'store-bench-'));
  const [port] = await freePorts(1);
  const url = `mongodb://127.0.0.1:${port}/?directConnection=true`;
  const proc = c.start(dataDir, port!);
  try {
    await waitReady(proc, 'MongoDB ping', 120_000, () => mongoReady(url));
    const seed = await new mongo.MongoClient(url).connect();
    const ledger = seed.db('bench').collection<ReturnType<typeof ledgerRow>>('ledger');
    await ledger.createIndex({ tenantId: 1, createdAt: -1 });
    for (let i = 0; i < 20_000; i += 1000)
      await ledger.insertMany(Array.from({ length: 1000 }, (_, k) => ledgerRow(i + k)));
    await seed.close();
    const clients = {
      off: await new mongo.MongoClient(url, { maxPoolSize: IN_FLIGHT }).connect(),
      on: await new mongo.MongoClient(url, { maxPoolSize: IN_FLIGHT, monitorCommands: true }).connect(),
    };
    let counted = 0;
    clients.on.on('commandStarted', () => counted++);
    const reads = {
      'point read by `_id`': (db: mongo.Db) =>
        db.collection('ledger').findOne({ _id: `e-${Math.floor(Math.random() * 20_000)}` as never }),
      'page of 25 (newest of a tenant)': (db: mongo.Db) =>
        db
          .collection('ledger')
          .find({ tenantId: `tenant-${Math.floor(Math.random() * TENANTS)}` })
          .sort({ createdAt: -1 })
          .limit(25)
          .toArray(),
    };
    const rows: string[] = [];
    for (const [name, read] of Object.entries(reads)) {
      const runs = { off: [] as number[], on: [] as number[] };
      for (let round = 0; round < 3; round++) {
        for (const mode of ['off', 'on'] as const) runs[mode].push(await rate(() => read(clients[mode].db('bench'))));
      }
      const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[1]!;
      const [off, on] = [median(runs.off), median(runs.on)];
      rows.push(
        `| ${name} | ${Math.round(off).toLocaleString('en-US')}/s | ${Math.round(on).toLocaleString('en-US')}/s | **${((100 * on) / off).toFixed(0)} %** |`,
      );
    }
    await Promise.all([clients.off.close(), clients.on.close()]);
    return `### Counting store operations

What the kit's counter costs a process (\`STORE_OPS_COUNTING\`, on by default): it turns the driver's command monitoring on,
which also decodes every reply once more. The same reads, ${IN_FLIGHT} in flight, on ${c.name} with 20,000 documents,
monitoring off and on interleaved over three rounds (${SECONDS} s each), medians; ${counted.toLocaleString('en-US')} commands counted.

| read | monitoring off | on | on / off |
|---|---|---|---|
${rows.join('\n')}`;
  } finally {
    await proc.stop();
  }
}

async function main(): Promise<void> {
  const all = candidates();
  for (const c of all) {
    try {
      await measure(c);
    } catch (err) {
      process.stderr.write(`[bench stores] ${c.name} failed: ${err instanceof Error ? err.message : String(err)}\n`);
      for (const row of table.values()) if (!row.has(c.name)) row.set(c.name, ['failed']);
    }
  }
  const cost = await countingCost(all[all.length - 1]!).catch(
    (err: unknown) => `### Counting store operations\n\nNot measured: ${String(err)}`,
  );
  const sizes = SIZES.map((s) => (s >= 1_000_000 ? `${s / 1_000_000} M` : `${s / 1000} k`)).join(' → ');
  const lines = [...table].map(
    ([row, byCandidate]) =>
      `| ${row} | ${all.map((c) => (byCandidate.get(c.name) ?? ['—']).join(' → ')).join(' | ')} |`,
  );
  writePerformanceSection(
    'stores',
    `
## Store candidates

\`node --import tsx test/bench/stores.ts\` (part of \`make bench\`), one run on ${new Date().toISOString().slice(0, 10)},
${cpus().length} cores, every candidate alone on the machine while measured, the same Node client (mongodb driver), ledger-sized
documents of ${TENANTS} tenants with the index \`{tenantId, createdAt}\`. Each figure is given at ${sizes} documents (the
collection grows between measurements); ${SECONDS} s per rate. The SIGKILL row is measured once, after the largest size.
The embedded store (decision 0110) is the last column: the Rust server with \`--sync-on-commit\`.

| property | ${all.map((c) => c.name).join(' | ')} |
|---|${all.map(() => '---|').join('')}
${lines.join('\n')}

${cost}
`,
  );
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  },
);
