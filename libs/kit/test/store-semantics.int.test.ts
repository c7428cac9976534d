import { randomBytes } from 'node:crypto';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import mongoose, { type Connection } from 'mongoose';
import { ChangeFeed, connectMongo, createLogger, isTransient, storeOps } from '../src';
import { eventually } from '../../../test/harness/wait';

// What every service relies on from its store, as MongoDB 7 gives it: a conditional update of
// one document is atomic however many callers race for it (the wallet, claims and leases depend
// on it), and concurrent first upserts of one `_id` all succeed.
describe('the store under racing writers', () => {
  let conn: Connection;
  const RACERS = 1_000;
  const START = 500;

  beforeAll(async () => {
    conn = await mongoose
      .createConnection(process.env.MONGO_URL!, { dbName: `sem_${randomBytes(4).toString('hex')}`, maxPoolSize: 100 })
      .asPromise();
  });
  afterAll(() => conn.close());

  it(`lets exactly ${START} of ${RACERS} racing findOneAndUpdate calls take one unit each, and none more`, async () => {
    const c = conn.collection<{ _id: string; bal: number }>('racers_fam');
    await c.insertOne({ _id: 'wallet', bal: START });
    const results = await Promise.all(
      Array.from({ length: RACERS }, () =>
        c.findOneAndUpdate({ _id: 'wallet', bal: { $gte: 1 } }, { $inc: { bal: -1 } }, { returnDocument: 'after' }),
      ),
    );
    const won = results.filter((r) => r !== null);
    expect(won).toHaveLength(START);
    // Each winner saw a different balance: no two took the same unit.
    expect(new Set(won.map((r) => r.bal)).size).toBe(START);
    expect((await c.findOne({ _id: 'wallet' }))?.bal).toBe(0);
  });

  it(`lets exactly ${START} of ${RACERS} racing conditional updateOne calls modify the document`, async () => {
    const c = conn.collection<{ _id: string; bal: number }>('racers_update');
    await c.insertOne({ _id: 'wallet', bal: START });
    const results = await Promise.all(
      Array.from({ length: RACERS }, () => c.updateOne({ _id: 'wallet', bal: { $gte: 1 } }, { $inc: { bal: -1 } })),
    );
    expect(results.filter((r) => r.modifiedCount === 1)).toHaveLength(START);
    expect((await c.findOne({ _id: 'wallet' }))?.bal).toBe(0);
  });

  it('answers racing first upserts of one _id without a duplicate-key error, and counts every one', async () => {
    const c = conn.collection<{ _id: string; n: number }>('racers_upsert');
    const results = await Promise.allSettled(
      Array.from({ length: 50 }, () => c.updateOne({ _id: 'first' }, { $inc: { n: 1 } }, { upsert: true })),
    );
    expect(results.filter((r) => r.status === 'rejected')).toEqual([]);
    expect((await c.findOne({ _id: 'first' }))?.n).toBe(50);
  });
});

describe('store operations counted per process', () => {
  it('counts each command by collection and operation on connections the kit opens', async () => {
    const log = createLogger('store-ops-test', 'silent');
    const conn = await connectMongo({
      url: process.env.MONGO_URL!,
      dbName: `ops_${randomBytes(4).toString('hex')}`,
      log,
    });
    try {
      const before = storeOps.snapshot();
      const c = conn.collection('counted');
      await c.insertOne({ _id: 'a' } as never);
      await c.findOne({ _id: 'a' } as never);
      await c.updateOne({ _id: 'a' } as never, { $set: { x: 1 } });
      const after = storeOps.snapshot().counted ?? {};
      const delta = (op: string) => (after[op] ?? 0) - (before.counted?.[op] ?? 0);
      expect([delta('insert'), delta('find'), delta('update')]).toEqual([1, 1, 1]);
    } finally {
      await conn.close();
    }
  });
});

// A store that stops answering without closing the connection (it died and left the socket open, or
// the host is gone behind a half-open TCP connection): the command fails as a timeout, which
// every caller's retry treats as "the store is away", instead of waiting for ever. A store fault run
// once found a contact update still waiting 150 s after the store was killed, its consumer stalled.
describe('a store that stops answering', () => {
  it('fails the command in flight as transient after the operation timeout, and serves again once it answers', async () => {
    const target = new URL(process.env.MONGO_URL!);
    let frozen = false;
    const sockets = new Set<Socket>();
    const proxy = createServer((client) => {
      const upstream = connect(Number(target.port), target.hostname);
      sockets.add(client).add(upstream);
      client.on('data', (b) => void upstream.write(b));
      // Frozen: the store's answers are dropped and both connections stay open.
      upstream.on('data', (b) => void (frozen || client.write(b)));
      const end = () => (client.destroy(), upstream.destroy());
      client.on('error', end).on('close', end);
      upstream.on('error', end).on('close', end);
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    const url = new URL(target);
    url.host = `127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    const conn = await connectMongo({
      url: url.toString(),
      dbName: `stall_${randomBytes(4).toString('hex')}`,
      log: createLogger('test', 'silent'),
      countOps: false,
      timeoutMS: 1_500,
    });
    try {
      const c = conn.collection<{ _id: number }>('writes');
      await c.insertOne({ _id: 1 });
      frozen = true;
      const started = Date.now();
      const err = await c.insertOne({ _id: 2 }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeDefined();
      expect(isTransient(err)).toBe(true);
      expect(Date.now() - started).toBeLessThan(15_000);
      frozen = false;
      // The driver opens new connections and the store answers again.
      await eventually(
        'the insert',
        async () => {
          await c.insertOne({ _id: 3 });
          return true;
        },
        20_000,
        { intervalMs: 200, retryErrors: true },
      );
      expect(await c.findOne({ _id: 3 })).toEqual({ _id: 3 });
    } finally {
      await conn.close(true);
      for (const s of sockets) s.destroy();
      await new Promise((r) => proxy.close(r));
    }
  });
});

// A change stream waits longer than the operation timeout whenever nothing changes for a minute: the
// driver ends the wait with a timeout and resumes the stream, and the feed goes on waiting on it
// (reopening it would cost a read and wake its worker for nothing, once a minute per stream).
describe('a change feed across the operation timeout', () => {
  it('keeps waiting on the same stream through timeouts, and still reports the next change', async () => {
    const dbName = `feed_${randomBytes(4).toString('hex')}`;
    const conn = await connectMongo({
      url: process.env.MONGO_URL!,
      dbName,
      log: createLogger('test', 'silent'),
      countOps: false,
      timeoutMS: 1_000,
    });
    const model = conn.model('Watched', new mongoose.Schema({ n: Number }, { collection: 'watched' }));
    const woken: number[] = [];
    const feed = new ChangeFeed(
      [{ model, operations: ['insert'] }],
      () => woken.push(Date.now()),
      createLogger('test', 'silent'),
      300,
    );
    try {
      feed.start();
      await new Promise((r) => setTimeout(r, 3_500)); // three timeouts and more, nothing written
      expect(woken).toEqual([]); // a reopened stream would have woken its caller
      await model.collection.insertOne({ n: 1 });
      await eventually(
        'a waiter woken',
        () => {
          expect(woken.length).toBeGreaterThan(0);
          return true;
        },
        20_000,
        { intervalMs: 200, retryErrors: true },
      );
    } finally {
      await feed.stop();
      await conn.close(true);
    }
  });
});
