import { randomBytes } from 'node:crypto';
import { DomainError } from '@voiceapi/kit/errors';
import mongoose, { type Connection } from 'mongoose';
import { IdempotencyStore } from '../src/store/idempotency';

// The idempotency records against the real MongoDB-compatible server.
describe('IdempotencyStore', () => {
  let conn: Connection;
  let store: IdempotencyStore;
  const scope = (key: string) => ({ tenantId: 't1', mode: 'live' as const, key });

  beforeAll(async () => {
    conn = await mongoose
      .createConnection(process.env.MONGO_URL!, { dbName: `gw_idem_${randomBytes(4).toString('hex')}` })
      .asPromise();
    store = new IdempotencyStore(conn);
    for (const m of Object.values(conn.models)) await m.createIndexes();
  });
  afterAll(() => conn.close());

  const reason = async (p: Promise<unknown>) => {
    const err = await p.then(
      () => undefined,
      (e: unknown) => e,
    );
    return err instanceof DomainError ? err.reasonCode : String(err);
  };

  it('lets exactly one of two concurrent claims run; the other is told it is in progress', async () => {
    const results = await Promise.allSettled([store.claim(scope('k1'), 'h'), store.claim(scope('k1'), 'h')]);
    expect(results.filter((r) => r.status === 'fulfilled' && r.value.kind === 'claimed')).toHaveLength(1);
    const rejected = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect((rejected.reason as DomainError).reasonCode).toBe('idempotency_in_progress');
  });

  it('replays a completed answer and refuses another body', async () => {
    const claim = await store.claim(scope('k2'), 'hash-a');
    if (claim.kind !== 'claimed') throw new Error('expected a claim');
    await store.complete(claim.id, { status: 201, body: { id: 'x' } });
    expect(await store.claim(scope('k2'), 'hash-a')).toEqual({
      kind: 'replay',
      response: { status: 201, body: { id: 'x' } },
    });
    expect(await reason(store.claim(scope('k2'), 'hash-b'))).toBe('idempotency_key_reused');
  });

  it('replays any JSON answer exactly, including keys a document could not hold', async () => {
    const body = { company: { businessHours: { $x: 1, 'a.b': [[1, 2], []], nul: null } } };
    const claim = await store.claim(scope('k6'), 'h');
    if (claim.kind !== 'claimed') throw new Error('expected a claim');
    await store.complete(claim.id, { status: 201, body });
    expect(await store.claim(scope('k6'), 'h')).toEqual({ kind: 'replay', response: { status: 201, body } });
  });

  it('keeps keys apart per tenant and per key mode', async () => {
    await store.claim(scope('k3'), 'h');
    expect((await store.claim({ ...scope('k3'), mode: 'sandbox' }, 'h')).kind).toBe('claimed');
    expect((await store.claim({ ...scope('k3'), tenantId: 't2' }, 'h')).kind).toBe('claimed');
  });

  it('frees a released claim for a retry', async () => {
    const claim = await store.claim(scope('k4'), 'h');
    if (claim.kind !== 'claimed') throw new Error('expected a claim');
    await store.release(claim.id);
    expect((await store.claim(scope('k4'), 'h')).kind).toBe('claimed');
  });

  it('forgets records after 24 hours', async () => {
    const claim = await store.claim(scope('k5'), 'h');
    if (claim.kind !== 'claimed') throw new Error('expected a claim');
    await store.complete(claim.id, { status: 201, body: {} });
    expect(await store.sweep(new Date(Date.now() + 25 * 3600_000))).toBeGreaterThanOrEqual(1);
    expect((await store.claim(scope('k5'), 'other-body')).kind).toBe('claimed');
  });

  it('lets only the holder of a claim complete it: a retry that took over a stalled claim keeps its answer', async () => {
    const first = await store.claim(scope('k7'), 'h7');
    if (first.kind !== 'claimed') throw new Error('expected a claim');
    // The first request outlives its lock (its replica stalled); a retry takes the claim over.
    await conn
      .collection('idempotency_records')
      .updateOne({ requestHash: 'h7' }, { $set: { lockedUntil: new Date(0) } });
    const second = await store.claim(scope('k7'), 'h7');
    if (second.kind !== 'claimed') throw new Error('expected a takeover');
    await store.complete(second.id, { status: 201, body: { who: 'retry' } });
    await store.complete(first.id, { status: 201, body: { who: 'stalled' } });
    await store.release(first.id);
    expect(await store.claim(scope('k7'), 'h7')).toEqual({
      kind: 'replay',
      response: { status: 201, body: { who: 'retry' } },
    });
  });
});
