import { randomBytes } from 'node:crypto';
import { metrics } from '@opentelemetry/api';
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
  type DataPoint,
} from '@opentelemetry/sdk-metrics';
import mongoose, { type Connection } from 'mongoose';
import {
  consumerGroup,
  createKafka,
  createLogger,
  ensureStreams,
  EventPublisher,
  EventSubscriber,
  Outbox,
  streamOf,
} from '../src';
import { probe, probeOf, testEnvelope } from './fixtures/test-stream';

// The kit's SRE metrics against a real broker and the real database: the outbox's backlog, its
// oldest event and its parked events, the relay's lease, a consumer's lag, retries and dead letters.
describe('kit metrics', () => {
  const log = createLogger('kit-metrics-test', 'silent');
  const kafka = createKafka({ brokers: process.env.KAFKA_BROKERS!.split(','), clientId: 'kit-metrics-test', log });
  const suffix = randomBytes(4).toString('hex');
  const Envelope = testEnvelope(`m${suffix}`);
  const stream = streamOf(Envelope);
  const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 });
  let conn: Connection;
  let publisher: EventPublisher;

  beforeAll(async () => {
    // What the telemetry module's NodeSDK registers in a running process; the instruments are made after it.
    metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }));
    await ensureStreams(kafka, [Envelope], { partitions: 3 }, log);
    conn = await mongoose.createConnection(process.env.MONGO_URL!, { dbName: `kit_metrics_${suffix}` }).asPromise();
    publisher = new EventPublisher(kafka);
    await publisher.connect();
  });
  afterAll(async () => {
    await publisher.disconnect();
    await conn.dropDatabase();
    await conn.close();
    metrics.disable();
  });

  /** Every data point exported now, by instrument name. */
  const exported = async (): Promise<Map<string, DataPoint<unknown>[]>> => {
    exporter.reset();
    await reader.forceFlush();
    return new Map(
      exporter
        .getMetrics()
        .flatMap((r) => r.scopeMetrics.flatMap((s) => s.metrics))
        .map((m) => [m.descriptor.name, m.dataPoints as DataPoint<unknown>[]]),
    );
  };
  const valueOf = (points: DataPoint<unknown>[] | undefined, attributes: Record<string, string> = {}) =>
    points?.find((p) => Object.entries(attributes).every(([k, v]) => p.attributes[k] === v))?.value;
  const until = async (what: string, check: () => boolean | Promise<boolean>, ms = 40_000) => {
    const end = Date.now() + ms;
    while (!(await check())) {
      if (Date.now() > end) throw new Error(`${what}: not met in time`);
      await new Promise((r) => setTimeout(r, 200));
    }
  };

  it("reports the outbox's backlog, its oldest event's age and its parked events, and the relay's lease", async () => {
    // Kafka away for this outbox: its events wait.
    const away = new EventPublisher(kafka);
    away.send = () =>
      Promise.reject(
        Object.assign(new Error('Connection error: connect ECONNREFUSED'), {
          name: 'KafkaJSConnectionError',
          retriable: true,
        }),
      );
    const outbox = new Outbox(conn, away, log, { instanceId: 'metrics-relay', intervalMs: 50, leaseMs: 2_000 });
    for (const n of [1, 2, 3]) await outbox.add(Envelope, 'k', probe('k', n));
    await outbox.parked.collection.insertOne({
      _id: 'parked-1',
      seq: 0,
      topic: stream.topic,
      key: 'k',
      type: stream.type,
      payload: Buffer.from([1]),
      createdAt: new Date(),
      availableAt: new Date(),
      error: 'MESSAGE_TOO_LARGE',
      parkedAt: new Date(),
    } as never);
    await new Promise((r) => setTimeout(r, 1_100));
    outbox.start();
    await until('the relay holds its lease', () => outbox.relaying);
    const got = await exported();
    expect(valueOf(got.get('voiceapi.outbox.backlog'))).toBe(3);
    expect(valueOf(got.get('voiceapi.outbox.oldest_age'))).toBeGreaterThanOrEqual(1);
    expect(valueOf(got.get('voiceapi.outbox.oldest_age'))).toBeLessThan(60);
    expect(valueOf(got.get('voiceapi.outbox.parked'))).toBe(1);
    expect(valueOf(got.get('voiceapi.lease.held'), { lease: 'outbox-relay' })).toBe(1);
    await outbox.stop();
    expect(valueOf((await exported()).get('voiceapi.lease.held'), { lease: 'outbox-relay' })).toBe(0);
  });

  it("reports its group's lag from the broker, its retries and its dead letters, by group and topic", async () => {
    const group = consumerGroup('kit-metrics', `lag-${suffix}`);
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const subscriber = new EventSubscriber(kafka, {
      group,
      log,
      publisher,
      fromBeginning: true,
      retry: { attempts: 2, initialDelayMs: 20, maxDelayMs: 20 },
    }).on(Envelope, async (event) => {
      const { key } = probeOf(event);
      if (key === 'fails') throw new Error('cannot apply this event');
      if (key === 'blocked') await gate;
    });
    subscriber.start();
    await subscriber.waitUntilReady(30_000);
    const attributes = { group, topic: stream.topic };
    await publisher.publish(Envelope, 'fails', probe('fails', 1));
    await until(
      'dead-lettered',
      async () => valueOf((await exported()).get('voiceapi.events.dead_lettered'), attributes) === 1,
    );
    expect(valueOf((await exported()).get('voiceapi.events.retries'), attributes)).toBe(1);
    for (const n of [1, 2, 3, 4]) await publisher.publish(Envelope, 'blocked', probe('blocked', n));
    // Read at most every 10 s: the first read may come before the events.
    await until(
      'the blocked events counted as lag',
      async () => Number(valueOf((await exported()).get('voiceapi.events.group.lag'), attributes)) >= 4,
    );
    open();
    await until(
      'the lag gone once handled',
      async () => valueOf((await exported()).get('voiceapi.events.group.lag'), attributes) === 0,
    );
    await subscriber.stop();
  }, 90_000);
});
