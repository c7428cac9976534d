import { randomBytes, randomUUID } from 'node:crypto';
import mongoose from 'mongoose';
import { createPromiseClient, type CallContext } from '@voiceapi/kit/grpc';
import { voiceapi } from '@voiceapi/proto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startKafka } from '@voiceapi/local-infra';
import { walletProblems } from '../../services/billing/test/invariants';
import { freePort, startProcess, waitFor, type Proc } from '../harness/processes';

const { CallDirection: D, TransactionType: T } = voiceapi.billing.v1;
type Client = ReturnType<typeof createPromiseClient<typeof voiceapi.billing.v1.BillingServiceService>>;

// Billing as a real process: killed with SIGKILL in the middle of settling ended calls (as
// telephony settles them: in batches, each resent until answered) and started again, and running
// through a Kafka restart. Every call ends with exactly one outcome and at most one ledger row, and
// the wallet's invariants hold.
describe('billing killed mid-batch', () => {
  const db = `billing_fault_${randomBytes(4).toString('hex')}`;
  let conn: mongoose.Connection;
  let port: number;
  let proc: Proc | undefined;

  const start = async (brokers = process.env.KAFKA_BROKERS!) => {
    proc = startProcess('billing', 'services/billing/dist/main.js', {
      MONGO_URL: process.env.MONGO_URL!,
      KAFKA_BROKERS: brokers,
      MONGO_DB: db,
      GRPC_PORT: String(port),
      INSTANCE_ID: `billing-fault-${randomUUID()}`,
      SWEEP_INTERVAL_MS: '500',
      SETTLE_AFTER_MS: '2000',
    });
    await waitFor(
      'billing',
      async () => {
        const c = createPromiseClient(voiceapi.billing.v1.BillingServiceService, `127.0.0.1:${port}`, {
          timeoutMs: 1_000,
        });
        try {
          await c.getRateCard({}, { tenantId: 'probe', keyMode: 'live' });
          return true;
        } finally {
          c.close();
        }
      },
      60_000,
      proc,
    );
  };
  jest.setTimeout(180_000);
  const ended = (
    callId: string,
    direction: voiceapi.billing.v1.CallDirection,
    durationSeconds: number,
  ): voiceapi.billing.v1.EndedCall => ({ callId, direction, durationSeconds, holdFailed: false, endTime: new Date() });
  /** Settles the calls as telephony does: 20 to a request, 4 requests in flight, a request that failed resent until answered. */
  const settleAll = async (client: () => Client, ctx: CallContext, calls: voiceapi.billing.v1.EndedCall[]) => {
    const batches = Array.from({ length: Math.ceil(calls.length / 20) }, (_, i) => calls.slice(i * 20, (i + 1) * 20));
    let next = 0;
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while (next < batches.length) {
          const batch = batches[next++]!;
          for (;;) {
            try {
              await client().settleCalls({ calls: batch }, ctx);
              break;
            } catch {
              await new Promise((r) => setTimeout(r, 200));
            }
          }
        }
      }),
    );
  };

  beforeAll(async () => {
    port = await freePort();
    conn = await mongoose.createConnection(process.env.MONGO_URL!, { dbName: db }).asPromise();
    await start();
  });
  afterAll(async () => {
    await proc?.stop();
    await conn.close();
  });

  it('charges every call exactly once across a crash', async () => {
    const ctx: CallContext = { tenantId: `t-${randomUUID()}`, keyMode: 'live' };
    let client = createPromiseClient(voiceapi.billing.v1.BillingServiceService, `127.0.0.1:${port}`, {
      timeoutMs: 20_000,
    });
    await client.topUp({ amount: 100_000, reference: 'top:1' }, ctx);
    const calls = Array.from({ length: 2_000 }, (_, i) => `${ctx.tenantId}-c${i}`);
    const expireTime = new Date(Date.now() + 600_000);
    // A tenant's concurrency is 10 calls by default: that many hold credit, the others are
    // charged from the available balance (a hold that was never placed).
    await Promise.all(
      calls
        .slice(0, 10)
        .map((callId) =>
          client.placeHold({ callId, amount: 20, direction: D.CALL_DIRECTION_OUTBOUND, expireTime }, ctx),
        ),
    );
    const ends = calls.map((callId) => ended(callId, D.CALL_DIRECTION_OUTBOUND, 61));
    // Some (not all) calls are charged, then the process dies without warning; the caller resends
    // what was not answered (and, answered or not, the first 50 once more) to the restarted process.
    // A call's outcome is the entry that posts its reference (decision 0139).
    const outcomes = () =>
      conn.collection('wallet_entries').countDocuments({ tenantId: ctx.tenantId, reference: /^call:/ });
    let current = client;
    const settling = settleAll(() => current, ctx, ends);
    await waitFor('some outcomes', async () => (await outcomes()) >= 100, 60_000, proc);
    proc!.child.kill('SIGKILL');
    await proc!.stop();
    const before = await outcomes();
    await start();
    current = createPromiseClient(voiceapi.billing.v1.BillingServiceService, `127.0.0.1:${port}`, {
      timeoutMs: 20_000,
    });
    await settling;
    await settleAll(() => current, ctx, ends.slice(0, 50));
    expect(await outcomes()).toBe(calls.length);
    expect(before).toBeLessThan(calls.length);
    client.close();
    current.close();

    client = createPromiseClient(voiceapi.billing.v1.BillingServiceService, `127.0.0.1:${port}`, { timeoutMs: 20_000 });
    const balance = await client.getBalance({}, ctx);
    client.close();
    // 61 s outbound = 2 started minutes × 2 credits, once per call.
    expect(balance.balance).toMatchObject({
      balance: 100_000 - 4 * calls.length,
      held: 0,
      available: 100_000 - 4 * calls.length,
    });
    const charged = await conn
      .collection('wallet_entries')
      .countDocuments({ tenantId: ctx.tenantId, reference: /^call:/, type: 'call_deduction', amount: -4 });
    expect(charged).toBe(calls.length);
    expect(await walletProblems(conn, ctx.tenantId!)).toEqual([]);
  });

  it('keeps settling and debiting across a Kafka restart, and announces what happened meanwhile', async () => {
    // A broker of this test's own, so stopping it disturbs no other suite.
    const dataDir = mkdtempSync(path.join(tmpdir(), 'billing-kafka-'));
    const [kafkaPort, controllerPort] = [await freePort(), await freePort()];
    let broker = await startKafka({ dataDir, port: kafkaPort, controllerPort });
    const brokers = broker.brokers.join(',');
    try {
      await proc?.stop();
      await start(brokers);
      const ctx: CallContext = { tenantId: `t-${randomUUID()}`, keyMode: 'live' };
      const client = createPromiseClient(voiceapi.billing.v1.BillingServiceService, `127.0.0.1:${port}`, {
        timeoutMs: 20_000,
      });
      await client.topUp({ amount: 10_000, reference: 'top:k' }, ctx);
      const ends = (from: number, n: number) =>
        Array.from({ length: n }, (_, i) => ended(`${ctx.tenantId}-k${from + i}`, D.CALL_DIRECTION_INBOUND, 30));
      const outcomes = () =>
        conn.collection('wallet_entries').countDocuments({ tenantId: ctx.tenantId, reference: /^call:/ });
      await settleAll(() => client, ctx, ends(0, 50));
      expect(await outcomes()).toBe(50);

      // Kafka goes away: the wallet keeps answering and settling (events wait in the outbox).
      await broker.stop();
      const during = await client.debit(
        {
          reference: 'number:during-outage',
          amount: 7,
          type: T.TRANSACTION_TYPE_NUMBER_PURCHASE,
          description: 'Number',
        },
        ctx,
      );
      expect(during.balance?.balance).toBe(10_000 - 50 - 7);
      await settleAll(() => client, ctx, ends(50, 50));
      expect(await outcomes()).toBe(100);

      broker = await startKafka({ dataDir, port: kafkaPort, controllerPort });
      // What happened during the outage reached Kafka once it was back (the outbox relayed it).
      await waitFor(
        'outbox drained',
        async () => (await conn.collection('outbox').countDocuments({})) === 0,
        60_000,
        proc,
      );
      const balance = await client.getBalance({}, ctx);
      client.close();
      // 30 s inbound = 1 started minute × 1 credit, once per call.
      expect(balance.balance?.balance).toBe(10_000 - 100 - 7);
      expect(await walletProblems(conn, ctx.tenantId!)).toEqual([]);
    } finally {
      await proc?.stop();
      proc = undefined;
      await broker.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
