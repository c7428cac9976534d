import { randomBytes, randomUUID } from 'node:crypto';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { context, propagation, trace, TraceFlags } from '@opentelemetry/api';
import mongoose, { type Connection } from 'mongoose';
import {
  createKafka,
  createLogger,
  ensureTopics,
  EventConsumer,
  EventProducer,
  Inbox,
  Outbox,
  type IncomingEvent,
} from '../src';

// The kit's Kafka path against a real broker: ids, keys, trace context, outbox relay, replay.
describe('kit Kafka producer, consumer, outbox and inbox', () => {
  const log = createLogger('kit-test', 'silent');
  const kafka = createKafka({ brokers: process.env.KAFKA_BROKERS!.split(','), clientId: 'kit-test', log });
  const suffix = randomBytes(4).toString('hex');
  const topic = `kit-test-${suffix}`;
  let producer: EventProducer;
  let conn: Connection;
  const consumers: EventConsumer[] = [];

  beforeAll(async () => {
    // What the telemetry module's NodeSDK registers in a running process.
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    await ensureTopics(kafka, [topic]);
    producer = new EventProducer(kafka);
    await producer.connect();
    conn = await mongoose.createConnection(process.env.MONGO_URL!, { dbName: `kit_${suffix}` }).asPromise();
  });
  afterAll(async () => {
    await Promise.all(consumers.map((c) => c.stop()));
    await producer.disconnect();
    await conn.close();
  });

  async function consume(group: string, inbox?: Inbox): Promise<IncomingEvent[]> {
    const seen: IncomingEvent[] = [];
    const consumer = new EventConsumer(kafka, `${group}-${suffix}`, log);
    consumers.push(consumer);
    await consumer.start([topic], async (e) => {
      const span = trace.getSpanContext(context.active());
      seen.push({ ...e, type: `${e.type}|${span?.traceId ?? 'no-trace'}` });
    }, { fromBeginning: true, ...(inbox && { inbox }) });
    await consumer.waitUntilReady(30_000);
    return seen;
  }

  const until = async (check: () => boolean, ms = 20_000) => {
    const end = Date.now() + ms;
    while (!check()) {
      if (Date.now() > end) throw new Error('condition not met in time');
      await new Promise((r) => setTimeout(r, 50));
    }
  };

  it('delivers payload, key, event id, type and the producer trace context', async () => {
    const seen = await consume('plain');
    const traceId = randomBytes(16).toString('hex');
    const parent = trace.setSpanContext(context.active(), { traceId, spanId: randomBytes(8).toString('hex'), traceFlags: TraceFlags.SAMPLED });
    const eventId = randomUUID();
    await context.with(parent, () =>
      producer.publish([{ topic, key: 'tenant-1', type: 'test.Thing', payload: Buffer.from('hello'), eventId }]),
    );
    await until(() => seen.some((e) => e.eventId === eventId));
    const got = seen.find((e) => e.eventId === eventId)!;
    expect(got.key).toBe('tenant-1');
    expect(got.payload.toString()).toBe('hello');
    expect(got.type).toBe(`test.Thing|${traceId}`);
  });

  it('relays events stored in the outbox, including ones left behind by a crashed process', async () => {
    const seen = await consume('outbox');
    const left = new Outbox(conn, producer, log);
    await left.add([{ topic, key: 'k', type: 'test.Left', payload: Buffer.from('left behind') }]);
    // Held for a write that never completed: published only once the hold expires.
    await new Outbox(conn, producer, log, { intervalMs: 100, retainPublishedMs: 60_000, holdMs: 300 }).add(
      [{ topic, key: 'k', type: 'test.Held', payload: Buffer.from('held') }],
      { hold: true },
    );
    // The process "crashes" here: nothing was flushed. A new instance's relay picks both up.
    const relay = new Outbox(conn, producer, log, { intervalMs: 100, retainPublishedMs: 60_000, holdMs: 200 });
    relay.start();
    await until(() => seen.some((e) => e.payload.toString() === 'left behind'));
    await until(() => seen.some((e) => e.payload.toString() === 'held'));
    await relay.stop();
    expect(await left.model.countDocuments({ publishedAt: null })).toBe(0);
  });

  it('publishes a held event only after it is released', async () => {
    const seen = await consume('held');
    const outbox = new Outbox(conn, producer, log, { intervalMs: 50, retainPublishedMs: 60_000, holdMs: 60_000 });
    const ids = await outbox.add([{ topic, key: 'k', type: 'test.Held', payload: Buffer.from('after the write') }], { hold: true });
    await outbox.flush();
    await new Promise((r) => setTimeout(r, 1_000));
    expect(seen.some((e) => e.payload.toString() === 'after the write')).toBe(false);
    await outbox.release(ids);
    await outbox.flush();
    await until(() => seen.some((e) => e.payload.toString() === 'after the write'));
  });

  it('skips a replayed event id when the consumer has an inbox', async () => {
    const inbox = new Inbox(conn);
    await inbox.model.createIndexes();
    const seen = await consume('inbox', inbox);
    const eventId = randomUUID();
    const event = { topic, key: 'k', type: 'test.Once', payload: Buffer.from('once'), eventId };
    await producer.publish([event]);
    await producer.publish([event]);
    const marker = randomUUID();
    await producer.publish([{ ...event, eventId: marker, payload: Buffer.from('marker') }]);
    await until(() => seen.some((e) => e.eventId === marker));
    expect(seen.filter((e) => e.eventId === eventId)).toHaveLength(1);
  });
});
