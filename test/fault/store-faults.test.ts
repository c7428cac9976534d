import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { mongo } from 'mongoose';
import { startStore, type StoreHandle } from '@voiceapi/local-infra';
import { freePort } from '../harness/processes';
import { call, startSystem, tenantWithKey, type System } from '../harness/system';
import { sleep } from '../harness/wait';
import { callsAcross, connect, serviceEnv, type Conns } from './calls-across';

// The store killed with SIGKILL under write load and started again on the same port and data:
// every write it acknowledged is there afterwards, and every service carries on by itself.
describe('the store killed with SIGKILL under load', () => {
  let dataDir: string;
  let port: number;
  let store: StoreHandle;
  const restart = async () => (store = await startStore({ dataDir, port }));
  const kill = async () => {
    process.kill(store.pid, 'SIGKILL');
    await store.exited;
  };
  jest.setTimeout(360_000);

  beforeAll(async () => {
    // A store of this suite's own, so killing it disturbs no other suite.
    dataDir = mkdtempSync(path.join(tmpdir(), 'store-fault-'));
    port = await freePort();
    await restart();
  });
  afterAll(async () => {
    await store?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('keeps every acknowledged insert of 32 concurrent writers', async () => {
    // A write in flight at the kill fails (the store's URL turns retryable writes off; see the next
    // test); the writer gives up within 2 s instead of waiting the default 30 s for a server.
    const client = await new mongo.MongoClient(store.url, {
      maxPoolSize: 32,
      serverSelectionTimeoutMS: 2_000,
    }).connect();
    const acknowledged: number[] = [];
    let stop = false;
    let next = 0;
    try {
      const docs = client.db('durability').collection<{ _id: number; at: Date }>('writes');
      const writer = async () => {
        while (!stop) {
          const id = next++;
          try {
            await docs.insertOne({ _id: id, at: new Date() });
            acknowledged.push(id);
          } catch {
            return; // the store went away: this writer's last insert was not acknowledged
          }
        }
      };
      const writers = Array.from({ length: 32 }, writer);
      await sleep(1_500);
      await kill();
      stop = true;
      await Promise.all(writers);
    } finally {
      await client.close(true);
    }
    await restart();
    const after = await new mongo.MongoClient(store.url).connect();
    try {
      const docs = after.db('durability').collection<{ _id: number }>('writes');
      const present = new Set((await docs.find({}, { projection: { _id: 1 } }).toArray()).map((d) => d._id));
      expect(acknowledged.length).toBeGreaterThan(100);
      expect(acknowledged.filter((id) => !present.has(id))).toEqual([]);
    } finally {
      await after.close();
    }
  });

  // MongoDB 7 keeps the record of which retryable writes it applied (config.transactions) in the
  // same commit as the write, so a driver's retry after a crash is answered, not applied again.
  // This store keeps that record in memory only: after a crash the retry runs again (an insert
  // answers duplicate key, an $inc counts twice). storeUrl therefore turns retryable writes off:
  // a write cut by a crash fails as unavailable (503), and the caller's retry, with its idempotency
  // key, settles it. When this test fails, the store keeps the record: turn them back on.
  it('forgets at a crash which retryable writes it applied (why its URL sets retryWrites=false)', async () => {
    expect(new URL(store.url).searchParams.get('retryWrites')).toBe('false');
    const client = await new mongo.MongoClient(store.url, { serverSelectionTimeoutMS: 20_000 }).connect();
    try {
      const db = client.db('retryable');
      const session = client.startSession();
      await db.collection('wallets').insertOne({ _id: 'w' as never, balance: 0 });
      const write = (txnNumber: number) =>
        db.command(
          {
            update: 'wallets',
            updates: [{ q: { _id: 'w' }, u: { $inc: { balance: 1 } } }],
            txnNumber: mongo.Long.fromNumber(txnNumber),
          },
          { session },
        );
      await write(1);
      expect((await write(1)).retriedStmtIds).toEqual([0]); // a retry while it runs is answered
      await kill();
      await restart();
      const retried = await write(1);
      expect(retried.retriedStmtIds).toBeUndefined(); // MongoDB 7: [0]
      expect(await db.collection('wallets').findOne({ _id: 'w' as never })).toMatchObject({ balance: 2 }); // MongoDB 7: 1
      await session.endSession();
    } finally {
      await client.close(true);
    }
  });

  describe('behind the services', () => {
    let sys: System;
    let conn: Conns;

    beforeAll(async () => {
      sys = await startSystem({ gateways: 1, serviceEnv, servers: { MONGO_URL: store.url } });
      conn = await connect(sys);
    });
    afterAll(async () => {
      await conn?.telephony.close();
      await conn?.billing.close();
      await sys?.stop();
    });

    it('dials and charges every lead once, and keeps every company the gateway acknowledged, across a store crash', async () => {
      const gw = sys.gateways[0]!.url;
      const { key } = await tenantWithKey(gw, {
        scopes: ['companies:read', 'companies:write'],
        rateLimitPerSecond: 100_000,
      });
      const created: string[] = [];
      const refused = new Map<number, number>();
      const failures: unknown[] = [];
      let writing = true;
      const writer = async (w: number) => {
        for (let i = 0; writing; i++) {
          const r = await call(`${gw}/api/v1/companies`, { key, body: { name: `Clinic ${w}-${i}` } }).catch(
            () => undefined,
          ); // no answer is counted below as 'no answer'
          if (r?.status === 201) created.push(r.body.company.id as string);
          else {
            refused.set(r?.status ?? 0, (refused.get(r?.status ?? 0) ?? 0) + 1);
            if (!r || (r.status >= 500 && r.status !== 503)) failures.push(r?.body ?? 'no answer');
            await sleep(100);
          }
        }
      };
      const writers = Array.from({ length: 4 }, (_, w) => writer(w));
      try {
        await callsAcross(sys, conn, async () => {
          await kill();
          await sleep(2_000);
          await restart();
        });
      } finally {
        writing = false;
        await Promise.all(writers);
      }
      // Writes went on before, during and after the crash; what was refused said so (no 500).
      expect({ created: created.length > 20, refused: Object.fromEntries(refused) }).toMatchObject({ created: true });
      expect({ statuses: [...refused.keys()].filter((s) => s === 500 || s === 0), failures }).toEqual({
        statuses: [],
        failures: [],
      });
      const missing: string[] = [];
      for (const id of created)
        if ((await call(`${gw}/api/v1/companies/${id}`, { key })).status !== 200) missing.push(id);
      expect(missing).toEqual([]);
    });
  });
});
