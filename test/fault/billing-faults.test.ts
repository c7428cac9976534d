import { randomBytes, randomUUID } from 'node:crypto';
import mongoose from 'mongoose';
import { createKafka, createLogger, createPromiseClient, eventRecord, EventPublisher, type CallContext } from '@voiceapi/kit';
import { voiceapi } from '@voiceapi/proto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startKafka } from '@voiceapi/local-infra';
import { walletProblems } from '../../services/billing/test/invariants';
import { freePort, startProcess, waitFor, type Proc } from '../harness/processes';

const { CallDirection: D, TransactionType: T } = voiceapi.billing.v1;
const { TelephonyCallEvent, CallDirection: ED } = voiceapi.events.v1;

// Billing as a real process: killed with SIGKILL in the middle of charging a batch of ended
// calls and started again, and running through a Kafka restart. Every call ends with exactly one
// outcome and at most one ledger row, and the wallet's invariants hold.
describe('billing killed mid-batch', () => {
  const db = `billing_fault_${randomBytes(4).toString('hex')}`;
  const log = createLogger('billing-fault', 'silent');
  let conn: mongoose.Connection;
  let publisher: EventPublisher;
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
        const c = createPromiseClient(voiceapi.billing.v1.BillingServiceService, `127.0.0.1:${port}`, { timeoutMs: 1_000 });
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
  // The restart waits out the killed member's Kafka session (30 s) before it gets the partitions.
  jest.setTimeout(180_000);

  beforeAll(async () => {
    port = await freePort();
    conn = await mongoose.createConnection(process.env.MONGO_URL!, { dbName: db }).asPromise();
    publisher = new EventPublisher(createKafka({ brokers: process.env.KAFKA_BROKERS!.split(','), clientId: 'billing-fault', log }));
    await publisher.connect();
    await start();
  });
  afterAll(async () => {
    await proc?.stop();
    await publisher.disconnect();
    await conn.close();
  });

  it('charges every call exactly once across a crash', async () => {
    const ctx: CallContext = { tenantId: `t-${randomUUID()}`, keyMode: 'live' };
    let client = createPromiseClient(voiceapi.billing.v1.BillingServiceService, `127.0.0.1:${port}`, { timeoutMs: 20_000 });
    await client.topUp({ amount: 100_000, reference: 'top:1' }, ctx);
    const calls = Array.from({ length: 200 }, (_, i) => `${ctx.tenantId}-c${i}`);
    const expireTime = new Date(Date.now() + 600_000);
    // A tenant's concurrency is 10 calls by default: that many hold credit, the others are
    // charged from the available balance (a hold that was never placed).
    await Promise.all(calls.slice(0, 10).map((callId) => client.placeHold({ callId, amount: 20, direction: D.CALL_DIRECTION_OUTBOUND, expireTime }, ctx)));
    const events = calls.map((callId) =>
      eventRecord(
        TelephonyCallEvent,
        callId,
        TelephonyCallEvent.fromPartial({
          occurTime: new Date(),
          event: { $case: 'callEnded', callEnded: { callId, tenantId: ctx.tenantId!, direction: ED.CALL_DIRECTION_OUTBOUND, durationSeconds: 61, endTime: new Date() } },
        }),
      ),
    );
    await publisher.send(events);
    // Some (not all) calls are charged, then the process dies without warning.
    const outcomes = () => conn.collection('call_outcomes').countDocuments({ tenantId: ctx.tenantId });
    await waitFor('some outcomes', async () => (await outcomes()) >= 20, 60_000, proc);
    proc!.child.kill('SIGKILL');
    await proc!.stop();
    const before = await outcomes();
    client.close();

    // Redelivered too: the same ends again after the restart.
    await start();
    await publisher.send(events.slice(0, 50).map((e) => ({ ...e, eventId: randomUUID() })));
    await waitFor('every call settled', async () => (await outcomes()) === calls.length, 120_000, proc);
    expect(before).toBeLessThan(calls.length);

    client = createPromiseClient(voiceapi.billing.v1.BillingServiceService, `127.0.0.1:${port}`, { timeoutMs: 20_000 });
    const balance = await client.getBalance({}, ctx);
    client.close();
    // 61 s outbound = 2 started minutes × 2 credits, once per call.
    expect(balance.balance).toMatchObject({ balance: 100_000 - 4 * calls.length, held: 0, available: 100_000 - 4 * calls.length });
    const charged = await conn.collection('call_outcomes').countDocuments({ tenantId: ctx.tenantId, status: 'charged', creditsCharged: 4 });
    expect(charged).toBe(calls.length);
    expect(await walletProblems(conn, ctx.tenantId!)).toEqual([]);
  });

  it('keeps charging and debiting across a Kafka restart, and announces what happened meanwhile', async () => {
    // A broker of this test's own, so stopping it disturbs no other suite.
    const dataDir = mkdtempSync(path.join(tmpdir(), 'billing-kafka-'));
    const [kafkaPort, controllerPort] = [await freePort(), await freePort()];
    let broker = await startKafka({ dataDir, port: kafkaPort, controllerPort });
    const brokers = broker.brokers.join(',');
    const ownPublisher = new EventPublisher(createKafka({ brokers: broker.brokers, clientId: 'billing-fault-kafka', log }));
    try {
      await proc?.stop();
      await start(brokers);
      await ownPublisher.connect();
      const ctx: CallContext = { tenantId: `t-${randomUUID()}`, keyMode: 'live' };
      const client = createPromiseClient(voiceapi.billing.v1.BillingServiceService, `127.0.0.1:${port}`, { timeoutMs: 20_000 });
      await client.topUp({ amount: 10_000, reference: 'top:k' }, ctx);
      const ends = (from: number, n: number) =>
        Array.from({ length: n }, (_, i) => {
          const callId = `${ctx.tenantId}-k${from + i}`;
          return eventRecord(
            TelephonyCallEvent,
            callId,
            TelephonyCallEvent.fromPartial({
              occurTime: new Date(),
              event: { $case: 'callEnded', callEnded: { callId, tenantId: ctx.tenantId!, direction: ED.CALL_DIRECTION_INBOUND, durationSeconds: 30, endTime: new Date() } },
            }),
          );
        });
      const outcomes = () => conn.collection('call_outcomes').countDocuments({ tenantId: ctx.tenantId });
      await ownPublisher.send(ends(0, 50));
      await waitFor('first calls settled', async () => (await outcomes()) === 50, 60_000, proc);

      // Kafka goes away: the wallet keeps answering (events wait in the outbox).
      await broker.stop();
      const during = await client.debit({ reference: 'number:during-outage', amount: 7, type: T.TRANSACTION_TYPE_NUMBER_PURCHASE, description: 'Number' }, ctx);
      expect(during.balance?.balance).toBe(10_000 - 50 - 7);

      broker = await startKafka({ dataDir, port: kafkaPort, controllerPort });
      await ownPublisher.send(ends(50, 50));
      await waitFor('every call settled', async () => (await outcomes()) === 100, 120_000, proc);
      // What happened during the outage reached Kafka once it was back (the outbox relayed it).
      await waitFor('outbox drained', async () => (await conn.collection('outbox').countDocuments({})) === 0, 60_000, proc);
      const balance = await client.getBalance({}, ctx);
      client.close();
      // 30 s inbound = 1 started minute × 1 credit, once per call.
      expect(balance.balance?.balance).toBe(10_000 - 100 - 7);
      expect(await walletProblems(conn, ctx.tenantId!)).toEqual([]);
    } finally {
      await ownPublisher.disconnect().catch(() => undefined); // teardown: the test's result is already decided, and a failed close must not hide it
      await proc?.stop();
      proc = undefined;
      await broker.stop();
    }
  });
});
