import { randomBytes, randomUUID } from 'node:crypto';
import { DomainError } from '@voiceapi/kit/errors';
import { scopeOfRecord } from '@voiceapi/kit/grpc';
import { ensureIndexes } from '@voiceapi/kit/mongo';
import { createLogger } from '@voiceapi/kit/service';
import mongoose from 'mongoose';
import { formatCursor, type CallChangeKind, type CallSnapshot } from '../src/domain/call-feed';
import type { Call } from '../src/domain/call';
import { callEvents } from '../src/events/publish';
import { CallFeedStore } from '../src/store/call-feed-store';
import { FeedFollowerStore } from '../src/store/feed-follower-store';
import { CallFeed, FeedFollowers, FeedWaiters } from '../src/usecases/call-feed';

// The call feed behind GET /calls/stream, on the harness's store: one order without gaps per tenant
// whichever writers append, reads that never pass a change not yet visible, resume, reset and refusal
// of cursors, filters, the wait for the next change, erasure and retention; changes written only for
// tenants that follow their stream.

const log = createLogger('call-feed-test', 'silent');

describe('the call feed (MongoDB)', () => {
  let conn: mongoose.Connection;
  let feed: CallFeed;
  let waiters: FeedWaiters;
  let store: CallFeedStore;
  let followerStore: FeedFollowerStore;
  let now = new Date();

  beforeAll(async () => {
    conn = await mongoose
      .createConnection(process.env.MONGO_URL!, { dbName: `telephony_feed_${randomBytes(4).toString('hex')}` })
      .asPromise();
    store = new CallFeedStore(conn);
    await ensureIndexes(conn);
    followerStore = new FeedFollowerStore(conn);
    waiters = new FeedWaiters();
    feed = new CallFeed({
      store,
      followers: new FeedFollowers({ store: followerStore, now: () => now }),
      waiters,
      now: () => now,
      log,
    });
  });
  afterAll(async () => {
    await conn.dropDatabase();
    await conn.close();
  });

  const tenant = () => scopeOfRecord(`t-${randomUUID()}`, 'live');
  const call = (id: string, extra: Partial<CallSnapshot> = {}): CallSnapshot => ({
    id,
    direction: 'outbound',
    status: 'queued',
    toNumber: '+14155550123',
    campaignId: 'c1',
    ...extra,
  });
  const change = (id: string, kind: CallChangeKind = 'call.started', extra: Partial<CallSnapshot> = {}) => ({
    id: `feed:${id}:${kind}`,
    change: kind,
    call: call(id, extra),
    at: new Date(),
  });

  it('gives each tenant one order without gaps, whichever writer appends, and each change one place', async () => {
    const t = tenant();
    // Two replicas' writers (each with its own idea of the head) appending at once.
    const other = new CallFeedStore(conn);
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) => (i % 2 ? store : other).append(t, change(`call_${i}`))),
    );
    expect(results.every(Boolean)).toBe(true);
    // A change delivered again is in the feed already: no new place.
    expect(await other.append(t, change('call_3'))).toBe(false);
    const all = await store.after(t, 0, 100);
    expect(all.map((e) => e.seq)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
    expect(new Set(all.map((e) => e.call.id)).size).toBe(40);
    // Another tenant's feed has its own order, from 1.
    const u = tenant();
    await store.append(u, change('call_u'));
    expect((await store.after(u, 0, 10)).map((e) => e.seq)).toEqual([1]);
  });

  it('answers only what follows the cursor without a gap, and the rest once it is there', async () => {
    const t = tenant();
    for (let i = 1; i <= 3; i++) await feed.record(t, change(`g${i}`));
    const first = await feed.read(t, undefined, {}, 100, 0);
    expect(first.changes).toEqual([]);
    const from0 = formatCursor({ seq: 0, atMs: now.getTime() });
    const r = await feed.read(t, from0, {}, 100, 0);
    expect(r.changes.map((e) => e.seq)).toEqual([1, 2, 3]);
    // Place 5 is written before place 4 is visible (a read overtaking a write): 4 and 5 wait.
    const entries = conn.collection('call_feed');
    await entries.insertOne({
      _id: 'feed:g5:call.started' as never,
      tenantId: t.tenantId,
      seq: 5,
      change: 'call.started',
      call: call('g5'),
      at: new Date(),
    });
    const waiting = await feed.read(t, r.cursor, {}, 100, 300);
    expect(waiting.changes).toEqual([]);
    expect(waiting.cursor).toBe(r.cursor);
    await entries.insertOne({
      _id: 'feed:g4:call.started' as never,
      tenantId: t.tenantId,
      seq: 4,
      change: 'call.started',
      call: call('g4'),
      at: new Date(),
    });
    expect((await feed.read(t, r.cursor, {}, 100, 0)).changes.map((e) => e.call.id)).toEqual(['g4', 'g5']);
  });

  it('waits for the next change and answers it as soon as it is written', async () => {
    const t = tenant();
    await feed.record(t, change('w1'));
    const at = await feed.read(t, formatCursor({ seq: 0, atMs: now.getTime() }), {}, 100, 0);
    const started = Date.now();
    const reading = feed.read(t, at.cursor, {}, 100, 5_000);
    setTimeout(() => void feed.record(t, change('w2', 'call.ringing', { status: 'ringing' })), 200);
    const r = await reading;
    expect(r.changes.map((e) => [e.change, e.call.status])).toEqual([['call.ringing', 'ringing']]);
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('filters by direction and campaign while the cursor moves past what it leaves out', async () => {
    const t = tenant();
    await feed.record(t, change('f1', 'call.started', { direction: 'inbound', campaignId: undefined }));
    await feed.record(t, change('f2', 'call.started', { campaignId: 'c2' }));
    await feed.record(t, change('f3'));
    const from0 = formatCursor({ seq: 0, atMs: now.getTime() });
    expect(
      (await feed.read(t, from0, { direction: 'outbound', campaignId: 'c1' }, 100, 0)).changes.map((e) => e.call.id),
    ).toEqual(['f3']);
    const inbound = await feed.read(t, from0, { direction: 'inbound' }, 100, 0);
    expect(inbound.changes.map((e) => e.call.id)).toEqual(['f1']);
    expect(inbound.cursor.startsWith('3-')).toBe(true);
  });

  it('refuses a cursor it did not give, and resets one older than a day', async () => {
    const t = tenant();
    await feed.record(t, change('r1'));
    for (const bad of [
      'x',
      '1',
      '1-',
      `9-${now.getTime().toString(36)}`,
      `1-${(now.getTime() + 3600_000).toString(36)}`,
    ]) {
      const err = await feed.read(t, bad, {}, 100, 0).catch((e: unknown) => e);
      expect({ bad, reason: (err as DomainError).reasonCode, path: (err as DomainError).details?.[0]?.path }).toEqual({
        bad,
        reason: 'validation_error',
        path: 'after',
      });
    }
    const old = await feed.read(t, formatCursor({ seq: 0, atMs: now.getTime() - 25 * 3600_000 }), {}, 100, 0);
    expect({ reset: old.reset, cursor: old.cursor.split('-')[0] }).toEqual({ reset: true, cursor: '1' });
  });

  it("erases a deleted contact's numbers from its calls' changes, and prunes what is older than kept", async () => {
    const t = tenant();
    await feed.record(
      t,
      change('e1', 'call.ended', { summary: 'talked about the appointment', fromNumber: '+14155550100' }),
    );
    await store.erase(t, ['e1']);
    const [erased] = await store.after(t, 0, 10);
    expect(erased!.call).not.toHaveProperty('toNumber');
    expect(erased!.call).not.toHaveProperty('fromNumber');
    expect(erased!.call).not.toHaveProperty('summary');
    expect(erased!.call.id).toBe('e1');
    // Two days on, the sweep takes it (and everything else of that age).
    now = new Date(Date.now() + 2 * 24 * 3600_000);
    while ((await feed.prune(1_000)) === 'more');
    expect(await store.after(t, 0, 10)).toEqual([]);
    now = new Date();
  });

  it("writes a tenant's changes only from its stream's first read, for a day and an hour after its last, whichever replica asks", async () => {
    const t = tenant();
    const added: string[] = [];
    const outbox = {
      publishOrAdd: async (records: { eventId: string }[]) => void added.push(...records.map((r) => r.eventId)),
    };
    // Another replica's writer: it learns of the follower from the store only.
    const writer = callEvents(
      outbox as never,
      new FeedFollowers({ store: new FeedFollowerStore(conn), now: () => now }),
    );
    const aCall = (id: string) =>
      ({
        id,
        tenantId: t.tenantId,
        direction: 'outbound',
        status: 'queued',
        startedAt: now,
        durationSeconds: 0,
      }) as unknown as Call;
    await writer.changed(aCall('n1'), 'call.started', now);
    expect(added).toEqual([]);
    // A stream opens (no cursor): the changes after it are written, by any replica.
    await feed.read(t, undefined, {}, 100, 0);
    await writer.changed(aCall('n1'), 'call.ringing', now);
    expect(added).toEqual(['feed:n1:call.ringing']);
    // A day later it still follows (a cursor is good for a day); a day and two hours after its last read it does not.
    const opened = now;
    now = new Date(opened.getTime() + 24 * 3600_000);
    await writer.changed(aCall('n2'), 'call.started', now);
    now = new Date(opened.getTime() + 26 * 3600_000);
    await writer.changed(aCall('n3'), 'call.started', now);
    expect(added).toEqual(['feed:n1:call.ringing', 'feed:n2:call.started']);
    // Reading again renews it.
    await feed.read(t, undefined, {}, 100, 0);
    await writer.changed(aCall('n3'), 'call.started', now);
    expect(added.at(-1)).toBe('feed:n3:call.started');
    expect((await followerStore.until(t))!.getTime()).toBe(now.getTime() + 25 * 3600_000);
    // Another tenant that never read its stream: nothing written.
    await writer.changed({ ...aCall('o1'), tenantId: tenant().tenantId }, 'call.started', now);
    expect(added).toHaveLength(3);
    now = new Date();
  });

  it('renews a mark once less than a day is left, however often its stream reads meanwhile', async () => {
    const t = tenant();
    const reader = new FeedFollowers({ store: followerStore, now: () => now });
    const opened = now.getTime();
    await reader.reading(t);
    expect((await followerStore.until(t))!.getTime()).toBe(opened + 25 * 3600_000);
    // Long polls every few minutes: nothing is stored while more than a day is left…
    for (const minutes of [4, 30, 59]) {
      now = new Date(opened + minutes * 60_000);
      await reader.reading(t);
    }
    expect((await followerStore.until(t))!.getTime()).toBe(opened + 25 * 3600_000);
    // …and the first read after that renews it for a day and an hour from then.
    now = new Date(opened + 61 * 60_000);
    await reader.reading(t);
    expect((await followerStore.until(t))!.getTime()).toBe(now.getTime() + 25 * 3600_000);
    now = new Date();
  });
});
