// Over 300 lines because one service's integration cases share its started store, Kafka and service per file.
import { randomBytes, randomUUID } from 'node:crypto';
import mongoose from 'mongoose';
import { DomainError } from '@voiceapi/kit/errors';
import { consumerGroup, createKafka, EventPublisher, EventSubscriber } from '@voiceapi/kit/events';
import { createPromiseClient, requireTenant, type CallContext } from '@voiceapi/kit/grpc';
import { createLogger } from '@voiceapi/kit/service';
import { voiceapi } from '@voiceapi/proto';
import { startBilling } from '../src/main';
import { WalletStore } from '../src/store/wallet-store';
import { Billing } from '../src/usecases/billing';
import { Wallets } from '../src/usecases/wallets';
import { walletProblems } from './invariants';

const { TransactionType: T, CallDirection: D } = voiceapi.billing.v1;
const { BillingCallEvent, BillingUsageEvent } = voiceapi.events.v1;
type CallBilled = voiceapi.events.v1.CallBilled;

// The billing service in-process against the harness's real MongoDB-compatible server and
// Kafka, called over real gRPC; ended calls arrive as real Kafka events.
describe('billing service (gRPC + MongoDB + Kafka)', () => {
  const db = `billing_it_${randomBytes(4).toString('hex')}`;
  let svc: Awaited<ReturnType<typeof startBilling>>;
  let client: ReturnType<typeof createPromiseClient<typeof voiceapi.billing.v1.BillingServiceService>>;
  let conn: mongoose.Connection;
  let publisher: EventPublisher;
  let listener: EventSubscriber;
  const billed = new Map<string, CallBilled[]>();
  const usage = new Map<string, voiceapi.events.v1.CreditsUsage[]>();
  const log = createLogger('billing-test', 'silent');
  const kafka = createKafka({ brokers: process.env.KAFKA_BROKERS!.split(','), clientId: 'billing-it', log });

  const tenant = (): CallContext => ({ tenantId: `t-${randomUUID()}`, keyMode: 'live' });
  const rejection = async (p: Promise<unknown>): Promise<DomainError> => {
    const err = await p.then(
      () => undefined,
      (e: unknown) => e,
    );
    if (!(err instanceof DomainError)) throw new Error(`expected a DomainError, got ${String(err)}`);
    return err;
  };
  const topUp = (ctx: CallContext, amount: number) => client.topUp({ amount, reference: `top:${randomUUID()}` }, ctx);
  const expectSound = async (ctx: CallContext) => expect(await walletProblems(conn, ctx.tenantId!)).toEqual([]);

  beforeAll(async () => {
    svc = await startBilling({
      MONGO_URL: process.env.MONGO_URL,
      KAFKA_BROKERS: process.env.KAFKA_BROKERS,
      MONGO_DB: db,
      GRPC_PORT: '0',
      LOG_LEVEL: 'silent',
      INSTANCE_ID: 'billing-it',
      SWEEP_INTERVAL_MS: '3600000', // the tests run the sweeper themselves
      SETTLE_AFTER_MS: '0',
    });
    client = createPromiseClient(voiceapi.billing.v1.BillingServiceService, `127.0.0.1:${svc.port}`, {
      timeoutMs: 20_000,
    });
    conn = await mongoose.createConnection(process.env.MONGO_URL!, { dbName: db }).asPromise();
    publisher = new EventPublisher(kafka);
    await publisher.connect();
    // Delivery is at least once with stable event ids (a redelivered end re-announces its outcome
    // under the same id): like every consumer, the listener counts distinct ids.
    const ids = new Set<string>();
    const fresh = (eventId: string) => !ids.has(eventId) && Boolean(ids.add(eventId));
    listener = new EventSubscriber(kafka, {
      group: consumerGroup('billing-it', `listener-${randomUUID()}`),
      log,
      publisher,
      fromBeginning: true,
    })
      .on(BillingUsageEvent, async (e, meta) => {
        if (e.event?.$case !== 'creditsUsage' || !fresh(meta.eventId)) return;
        const u = e.event.creditsUsage;
        usage.set(u.tenantId, [...(usage.get(u.tenantId) ?? []), u]);
      })
      .on(BillingCallEvent, async (e, meta) => {
        if (e.event?.$case !== 'callBilled' || !fresh(meta.eventId)) return;
        const list = billed.get(e.event.callBilled.callId) ?? [];
        list.push(e.event.callBilled);
        billed.set(e.event.callBilled.callId, list);
      });
    listener.start();
    await listener.waitUntilReady(30_000);
  });
  afterAll(async () => {
    await listener.stop();
    await publisher.disconnect();
    client.close();
    await conn.close();
    await svc.lifecycle.stop();
  });

  it('tops up, debits by reference, replays a debit and refuses a conflicting one, never below zero', async () => {
    const a = tenant();
    const up = await topUp(a, 100);
    expect(up.transaction).toMatchObject({ type: T.TRANSACTION_TYPE_TOP_UP, amount: 100, balanceAfter: 100 });
    expect(up.balance).toMatchObject({ balance: 100, available: 100, held: 0 });

    const d = await client.debit(
      { reference: 'number:1', amount: 30, type: T.TRANSACTION_TYPE_NUMBER_PURCHASE, description: 'Number +15550100' },
      a,
    );
    expect(d).toMatchObject({
      replayed: false,
      transaction: { amount: -30, balanceAfter: 70, reference: 'number:1' },
      balance: { balance: 70 },
    });
    const again = await client.debit(
      { reference: 'number:1', amount: 30, type: T.TRANSACTION_TYPE_NUMBER_PURCHASE, description: 'Number +15550100' },
      a,
    );
    expect(again).toMatchObject({ replayed: true, transaction: { id: d.transaction!.id, balanceAfter: 70 } });
    expect(
      (
        await rejection(
          client.debit(
            { reference: 'number:1', amount: 31, type: T.TRANSACTION_TYPE_NUMBER_PURCHASE, description: '' },
            a,
          ),
        )
      ).reasonCode,
    ).toBe('reference_conflict');
    expect(
      (
        await rejection(
          client.debit(
            { reference: 'upload:1', amount: 71, type: T.TRANSACTION_TYPE_KNOWLEDGE_UPLOAD, description: '' },
            a,
          ),
        )
      ).reasonCode,
    ).toBe('insufficient_credits');

    const b = await client.getBalance({}, a);
    expect(b.balance).toMatchObject({ balance: 70, available: 70, held: 0 });
    const list = await client.listTransactions(
      { page: { page: 1, limit: 10 }, type: T.TRANSACTION_TYPE_UNSPECIFIED },
      a,
    );
    expect(list.transactions.map((t) => t.amount)).toEqual([-30, 100]);
    expect(list.page).toMatchObject({ total: 2, hasMore: false });
    const typed = await client.listTransactions({ page: { page: 1, limit: 10 }, type: T.TRANSACTION_TYPE_TOP_UP }, a);
    expect(typed.transactions.map((t) => t.type)).toEqual([T.TRANSACTION_TYPE_TOP_UP]);
    await expectSound(a);
  });

  it('refuses sandbox spending, bad amounts and references, and keeps tenants apart', async () => {
    const a = tenant();
    await topUp(a, 10);
    const sandbox = { ...a, keyMode: 'sandbox' as const };
    expect(
      (
        await rejection(
          client.debit({ reference: 'x', amount: 1, type: T.TRANSACTION_TYPE_ADJUSTMENT, description: '' }, sandbox),
        )
      ).reasonCode,
    ).toBe('sandbox_not_billable');
    expect(
      (
        await rejection(
          client.placeHold(
            {
              callId: 'c1',
              amount: 1,
              direction: D.CALL_DIRECTION_OUTBOUND,
              expireTime: new Date(Date.now() + 60_000),
            },
            sandbox,
          ),
        )
      ).reasonCode,
    ).toBe('sandbox_not_billable');
    for (const amount of [0, -5, 1_000_000_001]) {
      expect((await rejection(client.topUp({ amount, reference: `r${amount}` }, a))).reasonCode).toBe(
        'validation_error',
      );
    }
    expect(
      (
        await rejection(
          client.debit({ reference: '', amount: 1, type: T.TRANSACTION_TYPE_ADJUSTMENT, description: '' }, a),
        )
      ).reasonCode,
    ).toBe('validation_error');
    expect(
      (
        await rejection(
          client.debit({ reference: 'c', amount: 1, type: T.TRANSACTION_TYPE_TOP_UP, description: '' }, a),
        )
      ).reasonCode,
    ).toBe('validation_error');
    expect((await rejection(client.getBalance({}, { tenantId: a.tenantId }))).reasonCode).toBe('unauthorized');
    const other = tenant();
    expect((await client.getBalance({}, other)).balance).toMatchObject({ balance: 0, available: 0, held: 0 });
    expect(
      (await client.listTransactions({ page: { page: 1, limit: 10 }, type: T.TRANSACTION_TYPE_UNSPECIFIED }, other))
        .transactions,
    ).toEqual([]);
    expect((await client.getBalance({}, a)).balance?.balance).toBe(10);
  });

  it('1,000 concurrent debits of 1 against 500 credits: exactly 500 succeed, 500 get insufficient_credits, balance 0', async () => {
    const a = tenant();
    await topUp(a, 500);
    const results = await Promise.allSettled(
      Array.from({ length: 1000 }, (_, i) =>
        client.debit({ reference: `d${i}`, amount: 1, type: T.TRANSACTION_TYPE_ADJUSTMENT, description: 'race' }, a),
      ),
    );
    const ok = results.filter((r) => r.status === 'fulfilled').length;
    const refused = results.filter(
      (r) => r.status === 'rejected' && (r.reason as DomainError).reasonCode === 'insufficient_credits',
    ).length;
    expect({ ok, refused }).toEqual({ ok: 500, refused: 500 });
    expect((await client.getBalance({}, a)).balance).toMatchObject({ balance: 0, available: 0 });
    expect(
      (await client.listTransactions({ page: { page: 1, limit: 1 }, type: T.TRANSACTION_TYPE_UNSPECIFIED }, a)).page
        ?.total,
    ).toBe(501);
    await expectSound(a);
  });

  it('holds reserve credit, capture charges the actual amount once, release frees the rest', async () => {
    const a = tenant();
    await topUp(a, 50);
    const expireTime = new Date(Date.now() + 600_000);
    const h = await client.placeHold(
      { callId: 'call-h1', amount: 20, direction: D.CALL_DIRECTION_OUTBOUND, expireTime },
      a,
    );
    expect(h.balance).toMatchObject({ balance: 50, held: 20, available: 30 });
    // Idempotent by call id; a hold the available balance cannot cover is refused.
    expect(
      (await client.placeHold({ callId: 'call-h1', amount: 20, direction: D.CALL_DIRECTION_OUTBOUND, expireTime }, a))
        .balance?.held,
    ).toBe(20);
    expect(
      (
        await rejection(
          client.placeHold({ callId: 'call-h2', amount: 31, direction: D.CALL_DIRECTION_OUTBOUND, expireTime }, a),
        )
      ).reasonCode,
    ).toBe('insufficient_credits');
    expect(
      (
        await rejection(
          client.debit({ reference: 'big', amount: 31, type: T.TRANSACTION_TYPE_ADJUSTMENT, description: '' }, a),
        )
      ).reasonCode,
    ).toBe('insufficient_credits');

    const c = await client.captureHold({ callId: 'call-h1', amount: 6, description: 'Outbound call, 3 min' }, a);
    expect(c).toMatchObject({
      replayed: false,
      transaction: { amount: -6, callId: 'call-h1', type: T.TRANSACTION_TYPE_CALL_DEDUCTION, balanceAfter: 44 },
      balance: { balance: 44, held: 0, available: 44 },
    });
    expect(await client.captureHold({ callId: 'call-h1', amount: 6, description: '' }, a)).toMatchObject({
      replayed: true,
      transaction: { id: c.transaction!.id },
    });
    // A charged call cannot hold again.
    expect(
      (
        await rejection(
          client.placeHold({ callId: 'call-h1', amount: 1, direction: D.CALL_DIRECTION_OUTBOUND, expireTime }, a),
        )
      ).reasonCode,
    ).toBe('reference_conflict');

    await client.placeHold({ callId: 'call-h3', amount: 10, direction: D.CALL_DIRECTION_INBOUND, expireTime }, a);
    expect(await client.releaseHold({ callId: 'call-h3' }, a)).toMatchObject({
      released: true,
      balance: { held: 0, available: 44 },
    });
    expect((await client.releaseHold({ callId: 'call-h3' }, a)).released).toBe(false);
    await expectSound(a);
  });

  it('two replicas debiting the same references at once post each reference once', async () => {
    const a = tenant();
    await topUp(a, 10_000);
    // A second replica: its own wallets and queues, the same database.
    const replica = new Billing(new Wallets(new WalletStore(conn), log), new WalletStore(conn), {
      outboundPerMinute: 2,
      inboundPerMinute: 1,
      knowledgePerThousandWords: 1,
    });
    const scope = requireTenant(a);
    const refs = Array.from({ length: 300 }, (_, i) => `dup:${i % 60}`);
    const results = await Promise.allSettled([
      ...refs.map((reference) =>
        client.debit({ reference, amount: 1, type: T.TRANSACTION_TYPE_ADJUSTMENT, description: 'one' }, a),
      ),
      ...refs.map((reference) =>
        replica.debit(scope, { reference, amount: 1, type: 'adjustment', description: 'two' }),
      ),
    ]);
    // Replicas racing may ask a caller to retry (wallet_busy); nothing else fails.
    for (const r of results)
      if (r.status === 'rejected') expect((r.reason as DomainError).reasonCode).toBe('wallet_busy');
    expect((await client.getBalance({}, a)).balance?.balance).toBe(10_000 - 60);
    await expectSound(a);
  });

  it('reads of a wallet asked together share the store reads, and each sees every entry acknowledged before it', async () => {
    const a = tenant();
    await topUp(a, 10_000);
    const scope = requireTenant(a);
    const store = new WalletStore(conn);
    const wallets = new Wallets(store, log);
    expect((await wallets.read(scope)).balance).toBe(10_000);
    const lookups = jest.spyOn(store, 'entryAt');
    // 200 debits appended by this process while 200 reads are asked (a quote for every call being dialled).
    const debit = (i: number) =>
      wallets.run(scope, { kind: 'debit', reference: `r:${i}`, amount: 1, type: 'adjustment', description: 'x' });
    const debits = Array.from({ length: 200 }, (_, i) => debit(i));
    const reads = await Promise.all(Array.from({ length: 200 }, () => wallets.read(scope)));
    await Promise.all(debits);
    // One entry looked up per shared read (the next one, absent), not one per read or per entry appended meanwhile.
    expect(lookups.mock.calls.length).toBeLessThanOrEqual(10);
    for (const r of reads) expect(r.balance).toBeLessThanOrEqual(10_000);
    const last = await debit(200);
    const after = await wallets.read(scope);
    expect(after.seq).toBeGreaterThanOrEqual(last.state.seq);
    expect(after.balance).toBe(10_000 - 201);
    lookups.mockRestore();
    await expectSound(a);
  });

  /** An ended call as telephony settles it (61 s outbound unless said otherwise). */
  const ended = (
    callId: string,
    extra: Partial<voiceapi.billing.v1.EndedCall> = {},
  ): voiceapi.billing.v1.EndedCall => ({
    callId,
    direction: D.CALL_DIRECTION_OUTBOUND,
    durationSeconds: 61,
    holdFailed: false,
    endTime: new Date(),
    ...extra,
  });
  const settle = async (ctx: CallContext, calls: voiceapi.billing.v1.EndedCall[]) =>
    (await client.settleCalls({ calls }, ctx)).settlements;
  /** The entry that posts the call's reference: its outcome (decision 0139). */
  const postedFor = async (callId: string) =>
    (await conn.collection('wallet_entries').findOne({ reference: `call:${callId}` })) as unknown as {
      kind: string;
      amount?: number;
      change?: { reason?: string };
    } | null;

  it('charges ended calls per started minute from their hold, once, whatever arrives twice or late', async () => {
    const a = tenant();
    await topUp(a, 100);
    const expireTime = new Date(Date.now() + 600_000);
    for (const id of ['o1', 'i1', 'z1']) {
      await client.placeHold(
        { callId: `${a.tenantId}-${id}`, amount: 20, direction: D.CALL_DIRECTION_OUTBOUND, expireTime },
        a,
      );
    }
    const id = (s: string) => `${a.tenantId}-${s}`;
    const [o1, again, i1, z1, f1] = await settle(a, [
      ended(id('o1')), // 61 s outbound: 2 started minutes × 2 = 4
      ended(id('o1')), // asked twice in one request
      ended(id('i1'), { direction: D.CALL_DIRECTION_INBOUND, durationSeconds: 125 }), // 3 × 1 = 3
      ended(id('z1'), { durationSeconds: 0 }), // no answer: skipped, hold released
      ended(id('f1'), { direction: D.CALL_DIRECTION_INBOUND, holdFailed: true }), // answered without a hold
    ]);
    const [s1] = await settle({ ...a, keyMode: 'sandbox' }, [ended(id('s1'))]); // sandbox: skipped
    // A late, different end of a charged call: the outcome that stands.
    const [late] = await settle(a, [ended(id('o1'), { durationSeconds: 300 })]);
    expect(o1).toMatchObject({
      billingStatus: 'charged',
      creditsCharged: 4,
      balanceAfter: expect.any(Number),
      transactionId: expect.any(String),
      ledgerSeq: expect.any(Number),
    });
    expect(again).toMatchObject({ billingStatus: 'charged', creditsCharged: 4, transactionId: o1!.transactionId });
    expect(late).toMatchObject({ billingStatus: 'charged', creditsCharged: 4, transactionId: o1!.transactionId });
    expect(i1).toMatchObject({ billingStatus: 'charged', creditsCharged: 3 });
    expect(z1).toMatchObject({ billingStatus: 'skipped', creditsCharged: 0 });
    expect(s1).toMatchObject({ billingStatus: 'skipped', creditsCharged: 0 });
    expect(f1).toMatchObject({ billingStatus: 'failed', creditsError: 'insufficient_credits' });
    expect((await client.getBalance({}, a)).balance).toMatchObject({ balance: 93, held: 0, available: 93 });
    // Telephony announces what it settles (with the call's end): billing announces neither the outcomes nor their usage.
    await new Promise((r) => setTimeout(r, 500));
    for (const c of ['o1', 'i1', 'z1', 's1', 'f1']) expect(billed.get(id(c))).toBeUndefined();
    expect(usage.get(a.tenantId!)).toBeUndefined();
    const rows = (
      await client.listTransactions({ page: { page: 1, limit: 10 }, type: T.TRANSACTION_TYPE_CALL_DEDUCTION }, a)
    ).transactions;
    expect(rows.map((r) => [r.callId, r.amount]).sort()).toEqual(
      [
        [id('i1'), -3],
        [id('o1'), -4],
      ].sort(),
    );
    // A hold for a call already settled is refused.
    expect(
      (
        await rejection(
          client.placeHold({ callId: id('z1'), amount: 1, direction: D.CALL_DIRECTION_OUTBOUND, expireTime }, a),
        )
      ).reasonCode,
    ).toBe('reference_conflict');
    await expectSound(a);
  });

  it('places the holds of a pass in one request, priced here, and settles calls that ended together in one, each once', async () => {
    const a = tenant();
    await topUp(a, 100);
    const expireTime = new Date(Date.now() + 600_000);
    const id = (s: string) => `${a.tenantId}-${s}`;
    // Outbound at 2 a minute: 600 s holds 20, 3,000 s would hold 100 (more than is left after the first two).
    const held = await client.placeCallHolds(
      {
        holds: [
          { callId: id('p1'), direction: D.CALL_DIRECTION_OUTBOUND, maxCallSeconds: 600, expireTime },
          { callId: id('p2'), direction: D.CALL_DIRECTION_OUTBOUND, maxCallSeconds: 600, expireTime },
          { callId: id('p3'), direction: D.CALL_DIRECTION_OUTBOUND, maxCallSeconds: 3_000, expireTime },
        ],
      },
      a,
    );
    expect(held.holds).toEqual([
      { callId: id('p1'), placed: true, amount: 20 },
      { callId: id('p2'), placed: true, amount: 20 },
      { callId: id('p3'), placed: false, amount: 100 },
    ]);
    expect((await client.getBalance({}, a)).balance).toMatchObject({ balance: 100, held: 40 });
    const endTime = new Date();
    const settle = () =>
      client.settleCalls(
        {
          calls: [
            {
              callId: id('p1'),
              direction: D.CALL_DIRECTION_OUTBOUND,
              durationSeconds: 61,
              holdFailed: false,
              endTime,
              contactId: 'ct-1',
            },
            { callId: id('p2'), direction: D.CALL_DIRECTION_OUTBOUND, durationSeconds: 0, holdFailed: false, endTime },
          ],
        },
        a,
      );
    const first = await settle();
    expect(first.settlements).toEqual([
      expect.objectContaining({
        callId: id('p1'),
        billingStatus: 'charged',
        creditsCharged: 4,
        balanceAfter: 96,
        transactionId: expect.any(String),
        ledgerSeq: expect.any(Number),
      }),
      expect.objectContaining({ callId: id('p2'), billingStatus: 'skipped', creditsCharged: 0 }),
    ]);
    // Resent (an answer lost on the way): the outcomes that stand, nothing charged twice.
    expect((await settle()).settlements).toEqual(first.settlements.map((s) => ({ ...s, billTime: expect.any(Date) })));
    expect((await client.getBalance({}, a)).balance).toMatchObject({ balance: 96, held: 0, available: 96 });
    // Another tenant's settle of the same call id is its own wallet's (decision 0139): it never reads
    // or changes this tenant's outcome or balance; bad input is refused.
    const other = tenant();
    const [theirs] = (
      await client.settleCalls(
        {
          calls: [
            { callId: id('p1'), direction: D.CALL_DIRECTION_OUTBOUND, durationSeconds: 61, holdFailed: false, endTime },
          ],
        },
        other,
      )
    ).settlements;
    expect(theirs).toMatchObject({ callId: id('p1'), billingStatus: 'failed', creditsCharged: 0 });
    expect((await client.getBalance({}, a)).balance).toMatchObject({ balance: 96, held: 0, available: 96 });
    expect((await settle()).settlements).toEqual(first.settlements.map((s) => ({ ...s, billTime: expect.any(Date) })));
    expect((await rejection(client.settleCalls({ calls: [] }, a))).reasonCode).toBe('validation_error');
    expect(
      (
        await rejection(
          client.settleCalls(
            {
              calls: [
                {
                  callId: 'bad id',
                  direction: D.CALL_DIRECTION_OUTBOUND,
                  durationSeconds: 1,
                  holdFailed: false,
                  endTime,
                },
              ],
            },
            a,
          ),
        )
      ).reasonCode,
    ).toBe('validation_error');
    expect(
      (
        await rejection(
          client.placeCallHolds(
            { holds: [{ callId: id('p4'), direction: D.CALL_DIRECTION_OUTBOUND, maxCallSeconds: 600, expireTime }] },
            { ...a, keyMode: 'sandbox' },
          ),
        )
      ).reasonCode,
    ).toBe('sandbox_not_billable');
    await expectSound(a);
  });

  it('charges what the wallet can cover when a call outgrows its hold, and never goes below zero', async () => {
    const a = tenant();
    await topUp(a, 5);
    await client.placeHold(
      {
        callId: `${a.tenantId}-long`,
        amount: 2,
        direction: D.CALL_DIRECTION_INBOUND,
        expireTime: new Date(Date.now() + 600_000),
      },
      a,
    );
    const [o] = await settle(a, [
      ended(`${a.tenantId}-long`, { direction: D.CALL_DIRECTION_INBOUND, durationSeconds: 600 }),
    ]); // 10 credits
    expect(o).toMatchObject({ billingStatus: 'charged', creditsCharged: 5, creditsError: 'insufficient_credits' });
    expect((await client.getBalance({}, a)).balance).toMatchObject({ balance: 0, available: 0, held: 0 });
    await expectSound(a);
  });

  it('a call billed as failed for want of credit stays uncharged when its end comes again after a top-up', async () => {
    const a = tenant();
    const callId = `${a.tenantId}-broke`;
    const [o] = await settle(a, [ended(callId)]);
    expect(o).toMatchObject({ billingStatus: 'failed', creditsError: 'insufficient_credits' });
    await topUp(a, 100);
    expect((await settle(a, [ended(callId)]))[0]).toMatchObject({
      billingStatus: 'failed',
      creditsError: 'insufficient_credits',
    });
    expect((await client.getBalance({}, a)).balance?.balance).toBe(100);
    // Call references are the calls' own: a debit cannot take one.
    expect(
      (
        await rejection(
          client.debit(
            { reference: `call:${callId}`, amount: 1, type: T.TRANSACTION_TYPE_ADJUSTMENT, description: '' },
            a,
          ),
        )
      ).reasonCode,
    ).toBe('validation_error');
    await expectSound(a);
  });

  it('the sweeper settles a hold whose call never ended, and a late end charges nothing', async () => {
    const a = tenant();
    await topUp(a, 30);
    const callId = `${a.tenantId}-lost`;
    await client.placeHold(
      { callId, amount: 10, direction: D.CALL_DIRECTION_OUTBOUND, expireTime: new Date(Date.now() + 300) },
      a,
    );
    await new Promise((r) => setTimeout(r, 400));
    await svc.sweeper.sweep();
    expect(await postedFor(callId)).toMatchObject({ kind: 'release', change: { reason: 'end_not_reported' } });
    expect((await client.getBalance({}, a)).balance).toMatchObject({ balance: 30, held: 0 });
    // No end announces it, so billing does (the tenant's billed webhook), once.
    const until = Date.now() + 15_000;
    while (!billed.has(callId) && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
    expect((await settle(a, [ended(callId)]))[0]).toMatchObject({
      billingStatus: 'failed',
      creditsError: 'end_not_reported',
    });
    await new Promise((r) => setTimeout(r, 500));
    expect((await client.getBalance({}, a)).balance?.balance).toBe(30);
    expect(billed.get(callId)).toHaveLength(1);
    await expectSound(a);
  });

  it('announces a credits-usage event for every debit row but calls’ (telephony announces those), and none for top-ups', async () => {
    const a = tenant();
    await topUp(a, 10);
    const d = await client.debit(
      { reference: 'upload:abc', amount: 2, type: T.TRANSACTION_TYPE_KNOWLEDGE_UPLOAD, description: 'Upload' },
      a,
    );
    const until = Date.now() + 15_000;
    while (!usage.has(a.tenantId!) && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
    await new Promise((r) => setTimeout(r, 300));
    expect(usage.get(a.tenantId!)).toEqual([
      expect.objectContaining({
        transactionId: d.transaction!.id,
        type: 'knowledge_upload',
        credits: 2,
        balanceAfter: 8,
        reference: 'upload:abc',
      }),
    ]);
    // The head hint (written at most once a second) records the chain as announced.
    const hinted = Date.now() + 10_000;
    let head = await conn.collection('wallet_heads').findOne({ _id: a.tenantId as never });
    while (head?.announcedSeq !== 2 && Date.now() < hinted) {
      await new Promise((r) => setTimeout(r, 100));
      head = await conn.collection('wallet_heads').findOne({ _id: a.tenantId as never });
    }
    expect(head).toMatchObject({ seq: 2, announcedSeq: 2 });
  });
});
