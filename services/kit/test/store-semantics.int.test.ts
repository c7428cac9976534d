import { randomBytes } from 'node:crypto';
import mongoose, { type Connection } from 'mongoose';
import { connectMongo, createLogger, storeOps } from '../src';

// What every service relies on from its store, as MongoDB 7 gives it: a conditional update of
// one document is atomic however many callers race for it (the wallet, claims and leases depend
// on it), and concurrent first upserts of one `_id` all succeed.
describe('the store under racing writers', () => {
  let conn: Connection;
  const RACERS = 1_000;
  const START = 500;

  beforeAll(async () => {
    conn = await mongoose.createConnection(process.env.MONGO_URL!, { dbName: `sem_${randomBytes(4).toString('hex')}`, maxPoolSize: 100 }).asPromise();
  });
  afterAll(() => conn.close());

  it(`lets exactly ${START} of ${RACERS} racing findOneAndUpdate calls take one unit each, and none more`, async () => {
    const c = conn.collection<{ _id: string; bal: number }>('racers_fam');
    await c.insertOne({ _id: 'wallet', bal: START });
    const results = await Promise.all(Array.from({ length: RACERS }, () => c.findOneAndUpdate({ _id: 'wallet', bal: { $gte: 1 } }, { $inc: { bal: -1 } }, { returnDocument: 'after' })));
    const won = results.filter((r) => r !== null);
    expect(won).toHaveLength(START);
    // Each winner saw a different balance: no two took the same unit.
    expect(new Set(won.map((r) => r.bal)).size).toBe(START);
    expect((await c.findOne({ _id: 'wallet' }))?.bal).toBe(0);
  });

  it(`lets exactly ${START} of ${RACERS} racing conditional updateOne calls modify the document`, async () => {
    const c = conn.collection<{ _id: string; bal: number }>('racers_update');
    await c.insertOne({ _id: 'wallet', bal: START });
    const results = await Promise.all(Array.from({ length: RACERS }, () => c.updateOne({ _id: 'wallet', bal: { $gte: 1 } }, { $inc: { bal: -1 } })));
    expect(results.filter((r) => r.modifiedCount === 1)).toHaveLength(START);
    expect((await c.findOne({ _id: 'wallet' }))?.bal).toBe(0);
  });

  it('answers racing first upserts of one _id without a duplicate-key error, and counts every one', async () => {
    const c = conn.collection<{ _id: string; n: number }>('racers_upsert');
    const results = await Promise.allSettled(Array.from({ length: 50 }, () => c.updateOne({ _id: 'first' }, { $inc: { n: 1 } }, { upsert: true })));
    expect(results.filter((r) => r.status === 'rejected')).toEqual([]);
    expect((await c.findOne({ _id: 'first' }))?.n).toBe(50);
  });
});

describe('store operations counted per process', () => {
  it('counts each command by collection and operation on connections the kit opens', async () => {
    const log = createLogger('store-ops-test', 'silent');
    const conn = await connectMongo({ url: process.env.MONGO_URL!, dbName: `ops_${randomBytes(4).toString('hex')}`, log });
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
