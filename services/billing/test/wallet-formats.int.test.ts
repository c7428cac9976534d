import { randomBytes, randomUUID } from 'node:crypto';
import mongoose from 'mongoose';
import { scopeOfRecord, type TenantScope } from '@voiceapi/kit/grpc';
import { createLogger } from '@voiceapi/kit/service';
import { startBilling } from '../src/main';
import { WalletStore } from '../src/store/wallet-store';
import { Wallets } from '../src/usecases/wallets';
import type { EntryFormat } from '../src/domain/wallet';
import { MAX_FIXED_ENTRY_BYTES, walletProblems } from './invariants';

// Decision 0137: a wallet whose entries list every open hold (billing 1.2, or the `compat`
// format) goes on in fixed-size entries, exactly; both formats against the harness's real store.
describe('wallet entry formats (MongoDB + Kafka)', () => {
  const db = `billing_formats_${randomBytes(4).toString('hex')}`;
  let svc: Awaited<ReturnType<typeof startBilling>>;
  let conn: mongoose.Connection;
  const log = createLogger('billing-formats-test', 'silent');

  beforeAll(async () => {
    svc = await startBilling({
      MONGO_URL: process.env.MONGO_URL,
      KAFKA_BROKERS: process.env.KAFKA_BROKERS,
      MONGO_DB: db,
      GRPC_PORT: '0',
      LOG_LEVEL: 'silent',
      INSTANCE_ID: 'billing-formats-it',
      SWEEP_INTERVAL_MS: '3600000', // the test runs the sweeper itself
      WALLET_ENTRY_FORMAT: 'fixed',
    });
    conn = await mongoose.createConnection(process.env.MONGO_URL!, { dbName: db }).asPromise();
  });
  const made: Wallets[] = [];
  afterAll(async () => {
    await Promise.all(made.map((w) => w.stop())); // their head hints, before the database goes
    await conn?.dropDatabase();
    await conn?.close();
    await svc?.lifecycle.stop();
  });

  const wallets = (format: EntryFormat) => {
    const w = new Wallets(new WalletStore(conn), log, undefined, format);
    made.push(w);
    return w;
  };
  const hold = (w: Wallets, scope: TenantScope, callId: string, expiresAt = new Date(Date.now() + 600_000)) =>
    w.run(scope, { kind: 'hold', callId, amount: 10, direction: 'outbound', expiresAt });
  /** The largest entry, in bytes as stored, of those that list holds or of those that do not. */
  const largest = async (tenantId: string, listing: boolean) => {
    const [r] = await conn
      .collection('wallet_entries')
      .aggregate<{ bytes: number }>([
        { $match: { tenantId, 'state.holds': { $exists: listing } } },
        { $group: { _id: null, bytes: { $max: { $bsonSize: '$$ROOT' } } } },
      ])
      .toArray();
    return r?.bytes ?? 0;
  };

  it('holds listed in the entries of billing 1.2 are found, closed once and expired after the switch; entries then stay under 2 KB with 1,000 holds open', async () => {
    const tenantId = `t-${randomUUID()}`;
    const scope = scopeOfRecord(tenantId);
    const call = (i: number) => `${tenantId.slice(2, 30)}-c${i}`;
    const old = wallets('compat');
    await old.run(scope, { kind: 'topUp', reference: 'top:1', amount: 100_000, description: 'Top-up' });
    const soon = new Date(Date.now() + 300);
    await Promise.all([
      hold(old, scope, call(0), soon),
      ...Array.from({ length: 299 }, (_, i) => hold(old, scope, call(i + 1))),
    ]);
    // Held by this release in `compat` (its entry names the call), released by a 1.2 replica (its entry does not).
    const x = `${tenantId.slice(2, 30)}-x`;
    const xHold = await hold(old, scope, x, soon);
    await old.run(scope, { kind: 'release', callId: x });
    // Billing 1.2's own shape: its holds and releases name the call only in `change`, its states count nothing.
    await conn
      .collection('wallet_entries')
      .updateMany(
        { tenantId, kind: 'hold', 'change.hold.callId': { $ne: x } },
        { $unset: { callId: '', expiresAt: '' } },
      );
    await conn.collection('wallet_entries').updateMany({ tenantId, kind: 'release' }, { $unset: { callId: '' } });
    expect(xHold.state.seq).toBeGreaterThan(300);
    await conn.collection('wallet_entries').updateMany({ tenantId }, { $unset: { 'state.openHolds': '' } });
    expect(await largest(tenantId, true)).toBeGreaterThan(10_000);

    const now = wallets('fixed');
    await Promise.all(Array.from({ length: 700 }, (_, i) => hold(now, scope, call(300 + i))));
    await hold(now, scope, call(1_000), soon);
    expect((await now.read(scope)).held).toBe(10_010);
    expect((await now.read(scope)).listedUpTo).toBe(xHold.state.seq + 1);
    expect(await largest(tenantId, false)).toBeLessThan(MAX_FIXED_ENTRY_BYTES);
    // A hold listed before the switch, and one placed after: replayed, not placed twice.
    expect(await hold(now, scope, call(5))).toMatchObject({ replayed: true, hold: { amount: 10 } });
    expect(await hold(now, scope, call(500))).toMatchObject({ replayed: true, hold: { amount: 10 } });
    // Captured and released from either side of the switch, each once.
    const captures = await Promise.all(
      [1, 2, 400, 401].map((i) => now.run(scope, { kind: 'capture', callId: call(i), amount: 4, description: 'call' })),
    );
    for (const c of captures) expect(c).toMatchObject({ released: true, shortfall: 0, row: { amount: -4 } });
    expect(await now.run(scope, { kind: 'release', callId: call(3) })).toMatchObject({ released: true });
    expect(await now.run(scope, { kind: 'release', callId: call(3) })).toMatchObject({ released: false });
    expect(await now.run(scope, { kind: 'release', callId: call(402) })).toMatchObject({ released: true });
    expect(await now.run(scope, { kind: 'capture', callId: call(1), amount: 4, description: 'call' })).toMatchObject({
      replayed: true,
      row: { amount: -4 },
    });
    // Another process that saw the wallet before the switch reads on from the chain.
    expect((await old.read(scope)).held).toBe(10_010 - 60);

    // The sweeper expires the two holds past their time, the listed one and the fixed-size one.
    await new Promise((r) => setTimeout(r, 400));
    await svc.sweeper.sweep();
    const after = await now.read(scope);
    expect(after).toMatchObject({ held: 10_010 - 80, openHolds: 993, balance: 100_000 - 16 });
    expect(after.holds).toBeUndefined();
    for (const i of [0, 1_000])
      expect(await conn.collection('wallet_entries').findOne({ tenantId, reference: `call:${call(i)}` })).toMatchObject(
        {
          kind: 'release',
          change: { reason: 'end_not_reported', released: 10 },
        },
      );

    // Everything settled: nothing held. The last list stays named (what 1.2 closed is known only there).
    const open = [...Array.from({ length: 1_000 }, (_, i) => i + 1)].filter(
      (i) => ![1, 2, 3, 400, 401, 402, 1_000].includes(i),
    );
    await Promise.all(open.map((i) => now.run(scope, { kind: 'release', callId: call(i), final: true })));
    const done = await now.read(scope);
    expect(done).toMatchObject({ held: 0, openHolds: 0, listedUpTo: expect.any(Number) });
    // The call held in `compat` and released by 1.2 is closed: neither expired nor replayed, held anew.
    await hold(now, scope, call(2_000));
    await svc.sweeper.sweep();
    expect(await conn.collection('wallet_entries').findOne({ tenantId, reference: `call:${x}` })).toBeNull();
    expect(await hold(now, scope, x)).toMatchObject({ replayed: false, state: { held: 20, openHolds: 2 } });
    for (const c of [x, call(2_000)]) await now.run(scope, { kind: 'release', callId: c, final: true });
    expect(await now.read(scope)).toMatchObject({ held: 0, openHolds: 0 });
    expect(await largest(tenantId, false)).toBeLessThan(MAX_FIXED_ENTRY_BYTES);
    expect(await walletProblems(conn, tenantId)).toEqual([]);
  }, 120_000);

  it('the compat format lists the holds for billing 1.2, and a fresh wallet in the fixed format lists none', async () => {
    const listed = scopeOfRecord(`t-${randomUUID()}`);
    const fixed = scopeOfRecord(`t-${randomUUID()}`);
    for (const [scope, format] of [
      [listed, 'compat'],
      [fixed, 'fixed'],
    ] as const) {
      const w = wallets(format);
      await w.run(scope, { kind: 'topUp', reference: 'top:1', amount: 100, description: 'Top-up' });
      await hold(w, scope, 'call-a');
      await w.run(scope, { kind: 'capture', callId: 'call-a', amount: 2, description: 'call' });
      await hold(w, scope, 'call-b');
    }
    expect((await wallets('compat').read(listed)).holds?.map((h) => h.callId)).toEqual(['call-b']);
    expect(await wallets('fixed').read(fixed)).toMatchObject({ held: 10, openHolds: 1, balance: 98 });
    expect((await wallets('fixed').read(fixed)).holds).toBeUndefined();
    for (const scope of [listed, fixed]) expect(await walletProblems(conn, scope.tenantId)).toEqual([]);
  });
});
