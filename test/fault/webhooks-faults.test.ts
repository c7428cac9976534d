import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import mongoose from 'mongoose';
import { createKafka, eventRecord, EventPublisher } from '@voiceapi/kit/events';
import { createPromiseClient, type CallContext } from '@voiceapi/kit/grpc';
import { createLogger } from '@voiceapi/kit/service';
import { startKafka } from '@voiceapi/local-infra';
import { voiceapi } from '@voiceapi/proto';
import { Receiver } from '../../services/webhooks/test/receiver';
import { freePort, startProcess, waitFor, type Proc } from '../harness/processes';

const { BillingCallEvent, CallDirection } = voiceapi.events.v1;

// Webhooks as a real process: killed with SIGKILL while deliveries are in flight and started again
// (as another replica would take over), and running through a Kafka restart. Every event reaches
// the receiver, verified, and an event id always comes with the same body (delivery is at least
// once: a receiver de-duplicates by `webhook-id`).
describe('webhooks killed mid-delivery, and across a Kafka restart', () => {
  const db = `webhooks_fault_${randomBytes(4).toString('hex')}`;
  const log = createLogger('webhooks-fault', 'silent');
  const secretsKey = randomBytes(32).toString('base64url');
  const receiver = new Receiver();
  let conn: mongoose.Connection;
  let port: number;
  let proc: Proc | undefined;
  // The restart waits out the killed member's Kafka session (30 s) before it gets the partitions.
  jest.setTimeout(240_000);

  /** A replica on `at` (default: the suite's port, which `client()` calls); a second replica needs a port of its own. */
  const start = async (brokers = process.env.KAFKA_BROKERS!, at = port) => {
    const instanceId = `webhooks-fault-${randomUUID()}`;
    proc = startProcess('webhooks', 'services/webhooks/dist/main.js', {
      MONGO_URL: process.env.MONGO_URL!,
      KAFKA_BROKERS: brokers,
      MONGO_DB: db,
      GRPC_PORT: String(at),
      // A new replica each time: what the dead one held is taken by another once its hold lapses.
      INSTANCE_ID: instanceId,
      WEBHOOK_SECRETS_KEY: secretsKey,
      OUTBOUND_ALLOWLIST: receiver.hostPort,
      WEBHOOK_RETRY_SCHEDULE: '0,300ms,1s,2s,5s',
      WEBHOOK_SWEEP_INTERVAL_MS: '300',
    });
    await waitFor(
      'webhooks',
      async () => {
        // This replica's own port: a probe answered by another replica says nothing of this one.
        const c = createPromiseClient(voiceapi.webhooks.v1.WebhooksServiceService, `127.0.0.1:${at}`, {
          timeoutMs: 10_000,
        });
        try {
          await c.listEndpoints({}, { tenantId: 'probe', keyMode: 'live' });
          return true;
        } finally {
          c.close();
        }
      },
      60_000,
      proc,
    );
  };
  const client = () =>
    createPromiseClient(voiceapi.webhooks.v1.WebhooksServiceService, `127.0.0.1:${port}`, { timeoutMs: 10_000 });
  const billed = (ctx: CallContext, n: number) =>
    Array.from({ length: n }, () => {
      const callId = randomUUID();
      return eventRecord(
        BillingCallEvent,
        ctx.tenantId!,
        BillingCallEvent.fromPartial({
          occurTime: new Date(),
          event: {
            $case: 'callBilled',
            callBilled: {
              callId,
              tenantId: ctx.tenantId!,
              direction: CallDirection.CALL_DIRECTION_INBOUND,
              billingStatus: 'charged',
              creditsCharged: 1,
              balanceAfter: 1,
              transactionId: `tx-${callId}`,
              sandbox: false,
              durationSeconds: 30,
            },
          },
        }),
        `billed:${callId}`,
      );
    });
  const register = async (ctx: CallContext) => {
    const p = `/${randomUUID()}`;
    const c = client();
    try {
      const r = await c.registerEndpoint({ url: `${receiver.base}${p}`, events: [] }, ctx);
      receiver.secrets.set(p, [r.secret]);
      return { id: r.endpoint!.id, path: p };
    } finally {
      c.close();
    }
  };
  /** Every message once at least, each id with one body, every request verified. */
  const expectAllDelivered = (p: string, n: number) => {
    const got = receiver.at(p);
    const bodies = new Map<string, Set<string>>();
    for (const r of got) bodies.set(r.id, (bodies.get(r.id) ?? new Set()).add(r.body));
    expect(bodies.size).toBe(n);
    expect([...bodies.values()].every((b) => b.size === 1)).toBe(true);
    expect(got.every((r) => r.verifiedBy.length === 1)).toBe(true);
    return got.length - n;
  };

  beforeAll(async () => {
    await receiver.start();
    port = await freePort();
    conn = await mongoose.createConnection(process.env.MONGO_URL!, { dbName: db }).asPromise();
  });
  afterAll(async () => {
    await proc?.stop();
    await conn.close();
    await receiver.stop();
  });

  it('delivers every event across a crash in the middle of delivering', async () => {
    await start();
    const ctx: CallContext = { tenantId: `t-${randomUUID()}`, keyMode: 'live' };
    const ep = await register(ctx);
    // Slow answers keep deliveries in flight and in memory when the process dies.
    receiver.behave = (p) => (p === ep.path ? { status: 204, delayMs: 100 } : { status: 204 });
    const publisher = new EventPublisher(
      createKafka({ brokers: process.env.KAFKA_BROKERS!.split(','), clientId: 'webhooks-fault', log }),
    );
    await publisher.connect();
    try {
      await publisher.send(billed(ctx, 300));
      await waitFor('some delivered', async () => receiver.at(ep.path).length >= 30, 60_000, proc);
      proc!.child.kill('SIGKILL');
      await proc!.stop();
      expect(receiver.at(ep.path).length).toBeLessThan(300);
      await start();
      await waitFor(
        'every event delivered',
        async () => new Set(receiver.at(ep.path).map((r) => r.id)).size === 300,
        150_000,
        proc,
      );
      const repeats = expectAllDelivered(ep.path, 300);
      // A delivery sent just before the kill but not recorded is sent again once the dead
      // replica's hold on it lapses (twice the attempt timeout and 30 s), then recorded.
      await waitFor(
        'every delivery recorded as succeeded',
        async () =>
          (await conn.collection('deliveries').countDocuments({ endpointId: ep.id, status: 'succeeded' })) === 300,
        60_000,
        proc,
      );
      await waitFor(
        'nothing left pending',
        async () =>
          (await conn.collection('deliveries').countDocuments({ endpointId: ep.id, status: 'pending' })) === 0,
        30_000,
        proc,
      );
      // Only what was in flight at the kill can have gone twice.
      expect(repeats).toBeLessThanOrEqual(32);
    } finally {
      await publisher.disconnect();
    }
  });

  it('keeps delivering through a Kafka restart and misses nothing published around it', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'webhooks-kafka-'));
    const [kafkaPort, controllerPort] = [await freePort(), await freePort()];
    let broker = await startKafka({ dataDir, port: kafkaPort, controllerPort });
    const publisher = new EventPublisher(
      createKafka({ brokers: broker.brokers, clientId: 'webhooks-fault-kafka', log }),
    );
    try {
      await proc?.stop();
      await start(broker.brokers.join(','));
      await publisher.connect();
      const ctx: CallContext = { tenantId: `t-${randomUUID()}`, keyMode: 'live' };
      const ep = await register(ctx);
      receiver.behave = () => ({ status: 204 });
      await publisher.send(billed(ctx, 50));
      await waitFor(
        'first half delivered',
        async () => new Set(receiver.at(ep.path).map((r) => r.id)).size === 50,
        60_000,
        proc,
      );
      await broker.stop();
      broker = await startKafka({ dataDir, port: kafkaPort, controllerPort });
      await publisher.send(billed(ctx, 50));
      await waitFor(
        'second half delivered',
        async () => new Set(receiver.at(ep.path).map((r) => r.id)).size === 100,
        120_000,
        proc,
      );
      expectAllDelivered(ep.path, 100);
    } finally {
      await publisher.disconnect().catch(() => undefined); // teardown: the test's result is already decided, and a failed close must not hide it
      await proc?.stop();
      proc = undefined;
      await broker.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('delivers every event when one of two replicas dies in the middle of delivering', async () => {
    // Two replicas on the same store and consumer group, as the charts deploy them.
    await start();
    const a = proc!;
    await start(undefined, await freePort());
    const b = proc!;
    const ctx: CallContext = { tenantId: `t-${randomUUID()}`, keyMode: 'live' };
    const ep = await register(ctx);
    // Slow answers keep deliveries held and in flight for a while (both replicas take the backlog).
    receiver.behave = (p) => (p === ep.path ? { status: 204, delayMs: 1_000 } : { status: 204 });
    const publisher = new EventPublisher(
      createKafka({ brokers: process.env.KAFKA_BROKERS!.split(','), clientId: 'webhooks-fault-replicas', log }),
    );
    await publisher.connect();
    try {
      await publisher.send(billed(ctx, 300));
      // The replica delivering the most dies (the one consuming the tenant's partition makes the
      // first attempts, and both take the backlog): the one whose freezing for a moment slows the
      // deliveries most.
      await waitFor('some delivered', async () => receiver.at(ep.path).length >= 30, 60_000, a);
      const consumer = await (async () => {
        const frozen = async (p: Proc) => {
          p.child.kill('SIGSTOP');
          try {
            await new Promise((r) => setTimeout(r, 1_000));
            const n = receiver.at(ep.path).length;
            await new Promise((r) => setTimeout(r, 1_000));
            return receiver.at(ep.path).length - n;
          } finally {
            p.child.kill('SIGCONT');
          }
        };
        return (await frozen(a)) <= (await frozen(b)) ? a : b;
      })();
      const holder = consumer;
      const survivor = holder === a ? b : a;
      proc = survivor;
      holder.child.kill('SIGKILL');
      await holder.stop();
      expect(new Set(receiver.at(ep.path).map((r) => r.id)).size).toBeLessThan(300);
      // The survivor takes the partition once the dead member's Kafka session ends, and what the
      // dead replica held once its holds lapse.
      await waitFor(
        'every event delivered',
        async () => new Set(receiver.at(ep.path).map((r) => r.id)).size === 300,
        150_000,
        survivor,
      );
      const repeats = expectAllDelivered(ep.path, 300);
      await waitFor(
        'every delivery recorded as succeeded',
        async () =>
          (await conn.collection('deliveries').countDocuments({ endpointId: ep.id, status: 'succeeded' })) === 300,
        60_000,
        survivor,
      );
      await waitFor(
        'nothing left pending',
        async () =>
          (await conn.collection('deliveries').countDocuments({ endpointId: ep.id, status: 'pending' })) === 0,
        60_000,
        survivor,
      );
      // Only what the dead replica had in flight can have gone twice (16 attempts per endpoint).
      expect(repeats).toBeLessThanOrEqual(32);
    } finally {
      await publisher.disconnect();
      await a.stop();
      await b.stop();
      proc = undefined;
    }
  });
});
