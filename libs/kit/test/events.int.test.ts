// Over 300 lines because one service's integration cases share its started store, Kafka and service per file.
import { spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import path from 'node:path';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { context, propagation, trace, TraceFlags } from '@opentelemetry/api';
import type { Consumer, KafkaMessage } from 'kafkajs';
import mongoose, { type Connection } from 'mongoose';
import {
  consumerGroup,
  createKafka,
  createLogger,
  DEAD_LETTER_HEADERS,
  ensureStreams,
  eventRecord,
  EventPublisher,
  EventSubscriber,
  Lease,
  Outbox,
  streamOf,
  type EventMeta,
  type EventRecord,
  type ReadBack,
} from '../src';
import { probe, probeOf, testEnvelope } from './fixtures/test-stream';

const ALWAYS: ReadBack = { applied: 'always', why: 'a test of order, not of settling' };

// The kit's event path against a real broker and the real database: typed streams, the
// leased outbox relay, retries and dead letters, and a consumer that crashes.
describe('kit events', () => {
  const log = createLogger('kit-test', 'silent');
  const kafka = createKafka({ brokers: process.env.KAFKA_BROKERS!.split(','), clientId: 'kit-test', log });
  const suffix = randomBytes(4).toString('hex');
  const Envelope = testEnvelope(suffix);
  const stream = streamOf(Envelope);
  const publishers: EventPublisher[] = [];
  const subscribers: EventSubscriber[] = [];
  const rawConsumers: Consumer[] = [];
  let publisher: EventPublisher;
  let conn: Connection;
  let dbCount = 0;

  const newPublisher = () => {
    const p = new EventPublisher(kafka);
    publishers.push(p);
    return p;
  };
  /** A database of its own per test, as each service has its own. */
  const freshDb = () => conn.useDb(`kit_${suffix}_${++dbCount}`, { useCache: false });
  const group = (purpose: string) => consumerGroup('kit-test', `${purpose}-${suffix}`);

  beforeAll(async () => {
    // What the telemetry module's NodeSDK registers in a running process.
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    await ensureStreams(kafka, [Envelope], { partitions: 3 }, log);
    publisher = newPublisher();
    conn = await mongoose.createConnection(process.env.MONGO_URL!, { dbName: `kit_${suffix}` }).asPromise();
  });
  afterAll(async () => {
    await Promise.all(subscribers.map((s) => s.stop()));
    await Promise.all(rawConsumers.map((c) => c.disconnect()));
    await Promise.all(publishers.map((p) => p.disconnect()));
    await conn.close();
  });

  interface Seen {
    key: string;
    n: number;
    meta: EventMeta;
    traceId: string | undefined;
  }

  async function subscribe(
    purpose: string,
    opts: { handler?: (s: Seen) => Promise<void>; concurrency?: number } = {},
  ): Promise<Seen[]> {
    const seen: Seen[] = [];
    const subscriber = new EventSubscriber(kafka, {
      group: group(purpose),
      log,
      publisher,
      fromBeginning: true,
      retry: { attempts: 3, initialDelayMs: 20, maxDelayMs: 50 },
      ...(opts.concurrency && { concurrency: opts.concurrency }),
    });
    subscribers.push(subscriber);
    subscriber.on(Envelope, async (event, meta) => {
      const s = { ...probeOf(event), meta: { ...meta }, traceId: trace.getSpanContext(context.active())?.traceId };
      await opts.handler?.(s);
      seen.push(s);
    });
    subscriber.start();
    await subscriber.waitUntilReady(30_000);
    return seen;
  }

  async function deadLetters(purpose: string): Promise<KafkaMessage[]> {
    const got: KafkaMessage[] = [];
    const consumer = kafka.consumer({ groupId: group(`${purpose}-dlq-reader`), maxWaitTimeInMs: 200 });
    rawConsumers.push(consumer);
    await consumer.connect();
    await consumer.subscribe({ topics: [stream.deadLetterTopic], fromBeginning: true });
    await consumer.run({ eachMessage: async ({ message }) => void got.push(message) });
    return got;
  }

  const until = async (what: string, check: () => boolean | Promise<boolean>, ms = 30_000) => {
    const end = Date.now() + ms;
    while (!(await check())) {
      if (Date.now() > end) throw new Error(`${what}: not met in time`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };

  it('names topics after the envelope and refuses a message that is not an envelope', () => {
    expect(stream.topic).toBe(`kit.test${suffix}.v1`);
    expect(stream.deadLetterTopic).toBe(`kit.test${suffix}.v1.dlq`);
    expect(() => streamOf({ ...Envelope, $type: 'voiceapi.companies.v1.Company' })).toThrow(/not an event envelope/);
  });

  it('delivers the typed event with its key, a stable id and the producer trace context', async () => {
    const seen = await subscribe('plain');
    const traceId = randomBytes(16).toString('hex');
    const parent = trace.setSpanContext(context.active(), {
      traceId,
      spanId: randomBytes(8).toString('hex'),
      traceFlags: TraceFlags.SAMPLED,
    });
    const eventId = await context.with(parent, () => publisher.publish(Envelope, 'tenant-1', probe('tenant-1', 7)));
    await until('delivered', () => seen.some((s) => s.meta.eventId === eventId));
    const got = seen.find((s) => s.meta.eventId === eventId)!;
    expect(got).toMatchObject({
      key: 'tenant-1',
      n: 7,
      traceId,
      meta: { key: 'tenant-1', topic: stream.topic, attempt: 1 },
    });
  });

  it('two relay replicas publish each event exactly once and every key in store order', async () => {
    const db = freshDb();
    const relays = ['replica-a', 'replica-b'].map(
      (instanceId) => new Outbox(db, newPublisher(), log, { instanceId, intervalMs: 50, leaseMs: 2_000 }),
    );
    const seen = await subscribe('relays');
    relays.forEach((r) => r.start());
    await until('one relay holds the lease', () => relays.some((r) => r.relaying));
    expect(relays.filter((r) => r.relaying)).toHaveLength(1);

    // Writers on both replicas, interleaved, some events announcing a write that takes a while.
    const keys = ['k0', 'k1', 'k2', 'k3', 'k4'];
    const next = new Map(keys.map((k) => [k, 0]));
    const ids: string[] = [];
    for (let round = 0; round < 20; round++) {
      for (const [i, key] of keys.entries()) {
        const writer = relays[(round + i) % 2]!;
        const n = next.get(key)!;
        next.set(key, n + 1);
        let id: string;
        if (n % 7 === 3) {
          const event = eventRecord(Envelope, key, probe(key, n));
          id = event.eventId;
          // Held once its write starts; released 30 ms later.
          await new Promise<void>(
            (started) =>
              void writer.announce([event], () => (started(), new Promise((r) => setTimeout(r, 30))), {
                readBack: ALWAYS,
              }),
          );
        } else {
          id = await writer.add(Envelope, key, probe(key, n));
        }
        ids.push(id);
      }
    }
    await until('all delivered', () => new Set(seen.map((s) => s.meta.eventId)).size >= ids.length);
    // A takeover: the holder stops; the other replica relays what comes next.
    const holder = relays.find((r) => r.relaying)!;
    const other = relays.find((r) => r !== holder)!;
    await holder.stop();
    const late = await other.add(Envelope, 'k0', probe('k0', next.get('k0')!));
    await until('relayed after takeover', () => seen.some((s) => s.meta.eventId === late));
    await other.stop();

    const mine = seen.filter((s) => ids.includes(s.meta.eventId) || s.meta.eventId === late);
    expect(mine).toHaveLength(ids.length + 1);
    expect(new Set(mine.map((s) => s.meta.eventId)).size).toBe(ids.length + 1);
    for (const key of keys) {
      const order = mine.filter((s) => s.key === key).map((s) => s.n);
      expect({ key, order }).toEqual({ key, order: [...order].sort((a, b) => a - b) });
    }
    expect(await relays[0]!.model.countDocuments({})).toBe(0);
  });

  it("wakes its relay in-process for its own writes, finds another replica's at its next look, and opens no change stream", async () => {
    const dbName = `kit_${suffix}_own_writes`;
    const watched = await mongoose
      .createConnection(process.env.MONGO_URL!, { dbName, monitorCommands: true })
      .asPromise();
    const other = await mongoose.createConnection(process.env.MONGO_URL!, { dbName }).asPromise();
    try {
      // Every command the relay's connection sends: a change stream would be an aggregate with $changeStream.
      const commands: { name: string; body: string }[] = [];
      watched
        .getClient()
        .on('commandStarted', (e: { commandName: string; command: unknown }) =>
          commands.push({ name: e.commandName, body: JSON.stringify(e.command) }),
        );
      const seen = await subscribe('own-writes');
      // Its own event: published at once, though the next look is a minute away.
      const relay = new Outbox(watched, newPublisher(), log, { instanceId: 'relay-replica', intervalMs: 60_000 });
      const writer = new Outbox(other, newPublisher(), log, { instanceId: 'writer-replica', intervalMs: 600_000 });
      relay.start();
      try {
        await until('the relay holds the lease', () => relay.relaying);
        await relay.add(Envelope, 'own', probe('own', 1));
        await until('its own event published', () => seen.some((x) => x.key === 'own'), 10_000);
        // Another replica's event waits for the next look: not published within two seconds.
        await writer.add(Envelope, 'theirs', probe('theirs', 1));
        await new Promise((r) => setTimeout(r, 2_000));
        expect(seen.some((x) => x.key === 'theirs')).toBe(false);
        expect(commands.filter((c) => c.body.includes('$changeStream'))).toEqual([]);
      } finally {
        await relay.stop();
      }
      // A relay that looks every 200 ms finds it.
      const looking = new Outbox(watched, newPublisher(), log, { instanceId: 'relay-replica', intervalMs: 200 });
      looking.start();
      try {
        await until("the other replica's event published", () => seen.some((x) => x.key === 'theirs'), 10_000);
      } finally {
        await looking.stop();
        await writer.stop();
      }
    } finally {
      await watched.close();
      await other.close();
    }
  });

  it('stores concurrent adds together in arrival order; an add naming a stored event fails alone', async () => {
    const counted = await mongoose
      .createConnection(process.env.MONGO_URL!, { dbName: `kit_${suffix}_together`, monitorCommands: true })
      .asPromise();
    try {
      const commands: string[] = [];
      // Data commands only (mongoose creates collections and indexes in the background).
      counted
        .getClient()
        .on(
          'commandStarted',
          (e: { commandName: string }) =>
            void (['create', 'createIndexes', 'listIndexes'].includes(e.commandName) || commands.push(e.commandName)),
        );
      const outbox = new Outbox(counted, publisher, log, { instanceId: 'together', intervalMs: 60_000 });
      const stored = await outbox.add(Envelope, 'd', probe('d', 0));
      // Twenty adds asked at once: stored together (one counter update and one insert), not two
      // commands per add.
      const before = commands.length;
      const first = await Promise.all(Array.from({ length: 20 }, (_, n) => outbox.add(Envelope, 'c', probe('c', n))));
      expect(commands.slice(before)).toEqual(['findAndModify', 'insert']);
      // A duplicate among adds stored together fails only its own add.
      const results = await Promise.allSettled([
        outbox.add(Envelope, 'c', probe('c', 20)),
        outbox.add(Envelope, 'c', probe('c', 21)),
        outbox.add(Envelope, 'd', probe('d', 1), { eventId: stored }),
        outbox.add(Envelope, 'c', probe('c', 22)),
      ]);
      expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
      const later = results
        .filter((r): r is PromiseFulfilledResult<string> => r.status === 'fulfilled')
        .map((r) => r.value);
      const docs = await outbox.model.find({ key: 'c' }).sort({ seq: 1 }).lean();
      expect(docs.map((d) => d._id)).toEqual([...first, ...later]);
      expect(await outbox.model.countDocuments({ _id: stored })).toBe(1);

      // Adding again what may be stored (a repeated announcement) keeps what is, and stores the rest.
      const again = eventRecord(Envelope, 'd', probe('d', 2), stored);
      const fresh = eventRecord(Envelope, 'd', probe('d', 3));
      await outbox.addOnce([again, fresh]);
      expect(await outbox.model.countDocuments({ _id: { $in: [stored, fresh.eventId] } })).toBe(2);
      await expect(outbox.addOnce([again])).resolves.toBeUndefined();
    } finally {
      await counted.close();
    }
  });

  it("gives writers adding at once to a new database distinct numbers, whatever the store answers the counter's first upserts", async () => {
    // The local store answered most concurrent first upserts of the counter without the document
    // (the increment applied): every add must still be stored, each at its own place.
    const db = `kit_${suffix}_race`;
    const conns = await Promise.all(
      Array.from({ length: 10 }, () => mongoose.createConnection(process.env.MONGO_URL!, { dbName: db }).asPromise()),
    );
    try {
      const writers = conns.map(
        (c, i) => new Outbox(c, publisher, log, { instanceId: `race-${i}`, intervalMs: 60_000 }),
      );
      // Each writer's first add races the others' to the counter (a writer's own adds share one update).
      const ids = (
        await Promise.all(
          writers.map(async (w, i) => [
            await w.add(Envelope, `race-${i}`, probe(`race-${i}`, 0)),
            await w.add(Envelope, `race-${i}`, probe(`race-${i}`, 1)),
          ]),
        )
      )
        .flat()
        .sort();
      const docs = await writers[0]!.model.find({}).lean();
      expect(docs.map((d) => d._id).sort()).toEqual(ids);
      expect(new Set(docs.map((d) => d.seq)).size).toBe(ids.length);
    } finally {
      await Promise.all(conns.map((c) => c.close()));
    }
  });

  it('numbers events of new keys from a block without a counter update, and a later event of such a key still comes after it', async () => {
    const db = `kit_${suffix}_fresh`;
    const counted = await mongoose
      .createConnection(process.env.MONGO_URL!, { dbName: db, monitorCommands: true })
      .asPromise();
    const other = await mongoose.createConnection(process.env.MONGO_URL!, { dbName: db }).asPromise();
    try {
      const commands: string[] = [];
      counted
        .getClient()
        .on(
          'commandStarted',
          (e: { commandName: string }) =>
            void (['create', 'createIndexes', 'listIndexes'].includes(e.commandName) || commands.push(e.commandName)),
        );
      const a = new Outbox(counted, publisher, log, { instanceId: 'fresh-a', intervalMs: 60_000 });
      const b = new Outbox(other, publisher, log, { instanceId: 'fresh-b', intervalMs: 60_000 });
      const seqOf = async (id: string) => (await a.model.findById(id).lean())!.seq;
      // The first takes a block from the counter; the replica then takes numbers after the block.
      const [first] = await a.addRecords([eventRecord(Envelope, 'new-1', probe('new-1', 0))], { freshKeys: true });
      const [elsewhere] = await b.addRecords([eventRecord(Envelope, 'old', probe('old', 0))]);
      expect(await seqOf(elsewhere!)).toBeGreaterThan(await seqOf(first!));
      // Another new key: from the block, one insert and no counter update, numbered before the replica's event.
      const before = commands.length;
      const second = eventRecord(Envelope, 'new-2', probe('new-2', 0));
      await a.announce([second], async () => expect(commands.slice(before)).toEqual(['insert']), {
        freshKeys: true,
        readBack: ALWAYS,
      });
      expect(await seqOf(second.eventId)).toBeLessThan(await seqOf(elsewhere!));
      // A later event of that key, on either replica, is numbered after it.
      const [laterHere] = await a.addRecords([eventRecord(Envelope, 'new-2', probe('new-2', 1))]);
      const [laterThere] = await b.addRecords([eventRecord(Envelope, 'new-2', probe('new-2', 2))]);
      expect(await seqOf(laterHere!)).toBeGreaterThan(await seqOf(second.eventId));
      expect(await seqOf(laterThere!)).toBeGreaterThan(await seqOf(laterHere!));
    } finally {
      await counted.close();
      await other.close();
    }
  });

  it('publishes an announced event only once its write applied, never one whose write did not happen, and reads back a write that failed part-way', async () => {
    const db = freshDb();
    const seen = await subscribe('held');
    const outbox = new Outbox(db, publisher, log, { instanceId: 'solo', intervalMs: 50, holdMs: 60_000 });
    const things = outbox.model.db.collection<{ _id: string }>('things');
    const inThings = (id: string): ReadBack => ({ collection: 'things', filter: { _id: id }, applied: 'present' });
    const delivered = (e: EventRecord) => seen.some((s) => s.meta.eventId === e.eventId);
    outbox.start();
    await until('lease', () => outbox.relaying);
    const [kept, nothing, partway, failed] = ['h', 'n', 'p', 'f'].map((k) => eventRecord(Envelope, k, probe(k, 1)));
    let finish!: () => void;
    const writing = outbox.announce(
      [kept!],
      () => new Promise<void>((r) => (finish = r)).then(() => things.insertOne({ _id: 'h' })),
      { readBack: inThings('h') },
    );
    expect(
      await outbox.announce([nothing!], async () => null, { applied: (r) => r !== null, readBack: inThings('n') }),
    ).toBeNull();
    const reset = () => Promise.reject(new Error('connection reset'));
    await expect(
      outbox.announce([partway!], () => things.insertOne({ _id: 'p' }).then(reset), { readBack: inThings('p') }),
    ).rejects.toThrow('connection reset');
    await expect(outbox.announce([failed!], reset, { readBack: inThings('f') })).rejects.toThrow('connection reset');
    await outbox.flush();
    await until('the write applied part-way delivered', () => delivered(partway!));
    expect(delivered(kept!)).toBe(false);
    finish();
    await writing;
    await outbox.flush();
    await until('the applied write delivered', () => delivered(kept!));
    // Later events of the same keys go out: nothing of those writes is left held.
    const markers = await Promise.all(['n', 'f'].map((k) => outbox.add(Envelope, k, probe(k, 2))));
    await until('markers delivered', () => markers.every((m) => seen.some((s) => s.meta.eventId === m)));
    expect([delivered(nothing!), delivered(failed!)]).toEqual([false, false]);
    await outbox.stop();
  });

  it('releases a held event in memory while relaying (no release write), in the store while not, and in the store for the next relay when it stops (decision 0143)', async () => {
    const dbName = `kit_${suffix}_released_here`;
    const counted = await mongoose
      .createConnection(process.env.MONGO_URL!, { dbName, monitorCommands: true })
      .asPromise();
    const other = await mongoose.createConnection(process.env.MONGO_URL!, { dbName }).asPromise();
    try {
      const updates: string[] = [];
      counted
        .getClient()
        .on(
          'commandStarted',
          (e: { commandName: string; command: { update?: string } }) =>
            void (e.commandName === 'update' && e.command.update === 'outbox' && updates.push(e.commandName)),
        );
      const seen = await subscribe('released-here');
      const delivered = (e: EventRecord) => seen.some((s) => s.meta.eventId === e.eventId);
      const relay = new Outbox(counted, publisher, log, { instanceId: 'relaying', intervalMs: 60_000, holdMs: 60_000 });
      const writer = new Outbox(other, publisher, log, { instanceId: 'writing', intervalMs: 60_000, holdMs: 60_000 });
      relay.start();
      await until('the relay holds the lease', () => relay.relaying);
      // The relaying replica's own announced event: published (its hold is a minute), never released by a write.
      const own = eventRecord(Envelope, 'own', probe('own', 1));
      await relay.announce([own], () => Promise.resolve(), { readBack: ALWAYS });
      await until('its own announced event published', () => delivered(own), 10_000);
      expect(updates).toEqual([]);
      await until('and removed', async () => (await relay.model.countDocuments({ _id: own.eventId })) === 0);
      // Another replica's: released in the store, where the relay finds it.
      const theirs = eventRecord(Envelope, 'theirs', probe('theirs', 1));
      await writer.announce([theirs], () => Promise.resolve(), { readBack: ALWAYS });
      const stored = await writer.model.findById(theirs.eventId).lean();
      expect(stored?.readBack).toBeUndefined();
      await relay.flush();
      await until("the other replica's event published", () => delivered(theirs), 10_000);
      // Released here while Kafka cannot take it, then the relay stops: the release is written, so the
      // next relay publishes it now rather than when its hold ends.
      const late = eventRecord(Envelope, 'late', probe('late', 1));
      const send = jest.spyOn(publisher, 'send').mockRejectedValue(new Error('Kafka away'));
      try {
        await relay.announce([late], () => Promise.resolve(), { readBack: ALWAYS });
        // A retry of the same write that matched nothing: it leaves the first try's event alone.
        await relay.announce([late], () => Promise.resolve(null), { applied: (r) => r !== null, readBack: ALWAYS });
        await relay.flush();
        await relay.stop();
      } finally {
        send.mockRestore();
      }
      expect(delivered(late)).toBe(false);
      const left = await relay.model.findById(late.eventId).lean();
      expect(left?.readBack).toBeUndefined();
      expect(left!.availableAt.getTime()).toBeLessThanOrEqual(Date.now());
      writer.start();
      await until('the next relay holds the lease', () => writer.relaying);
      await writer.flush();
      await until('published by the next relay', () => delivered(late), 10_000);
      await writer.stop();
    } finally {
      await counted.close();
      await other.close();
    }
  });

  /** A connection to a database of its own that counts the inserts into its outbox. */
  const countingOutboxInserts = async (name: string) => {
    const counted = await mongoose
      .createConnection(process.env.MONGO_URL!, { dbName: `kit_${suffix}_${name}`, monitorCommands: true })
      .asPromise();
    let n = 0;
    counted
      .getClient()
      .on(
        'commandStarted',
        (e: { commandName: string; command: { insert?: string } }) =>
          void (e.commandName === 'insert' && e.command.insert === 'outbox' && n++),
      );
    return { counted, inserts: () => n };
  };

  it('publishes at once while it relays an empty outbox; stores while events wait there or Kafka fails, and relays those in order (decision 0144)', async () => {
    const { counted, inserts } = await countingOutboxInserts('publish_now');
    try {
      const seen = await subscribe('publish-now');
      const delivered = (e: EventRecord) => seen.some((x) => x.meta.eventId === e.eventId);
      const own = newPublisher();
      const outbox = new Outbox(counted, own, log, { instanceId: 'publish-now', intervalMs: 60_000 });
      const [first, stuck, behind, after] = [1, 2, 3, 4].map((n) => eventRecord(Envelope, 'pn', probe('pn', n)));
      // Not relaying yet: stored.
      await outbox.publishOrAdd([first!]);
      expect(inserts()).toBe(1);
      outbox.start();
      try {
        await until('the relay holds the lease', () => outbox.relaying);
        await outbox.flush();
        await until('the stored event published', () => delivered(first!));
        // Relaying, the outbox empty: sent at once, nothing stored.
        const direct = eventRecord(Envelope, 'pn', probe('pn', 10));
        await outbox.publishOrAdd([direct]);
        await until('sent at once', () => delivered(direct));
        expect(inserts()).toBe(1);
        // Kafka fails the send: stored; the next event waits behind it in the outbox, not sent past it.
        const send = jest.spyOn(own, 'send').mockRejectedValue(new Error('Kafka away'));
        try {
          await outbox.publishOrAdd([stuck!]);
          expect(inserts()).toBe(2);
        } finally {
          send.mockRestore();
        }
        await outbox.publishOrAdd([behind!]);
        expect(inserts()).toBe(3);
        await outbox.flush();
        await until('both relayed', () => delivered(stuck!) && delivered(behind!));
        const order = seen.filter((x) => x.key === 'pn').map((x) => x.n);
        expect(order.indexOf(2)).toBeLessThan(order.indexOf(3));
        // Drained again: at once.
        await outbox.flush();
        await outbox.publishOrAdd([after!]);
        await until('the last sent', () => delivered(after!));
        expect(inserts()).toBe(3);
        // A send that fails while the next one waits its turn: the next one is stored behind it, not sent past it.
        await outbox.flush();
        const [failing, next] = [5, 6].map((n) => eventRecord(Envelope, 'pn', probe('pn', n)));
        jest
          .spyOn(own, 'send')
          .mockImplementationOnce(
            () => new Promise((_, reject) => setTimeout(() => reject(new Error('Kafka away')), 100)),
          );
        const failingSend = outbox.publishOrAdd([failing!]);
        await new Promise((r) => setTimeout(r, 30));
        await Promise.all([failingSend, outbox.publishOrAdd([next!])]);
        expect(inserts()).toBeGreaterThan(3); // both stored (together, or one insert each)
        await outbox.flush();
        await until('both relayed in order', () => delivered(failing!) && delivered(next!));
        const seenOrder = seen.filter((x) => x.key === 'pn').map((x) => x.n);
        expect(seenOrder.indexOf(5)).toBeLessThan(seenOrder.indexOf(6));
      } finally {
        await outbox.stop();
      }
    } finally {
      await counted.close();
    }
  });

  it('sends an `atOnce` event after its write while it relays an empty outbox, nothing stored; reads back a failed write first; holds it otherwise (decision 0149)', async () => {
    const { counted, inserts } = await countingOutboxInserts('at_once');
    try {
      const seen = await subscribe('at-once');
      const delivered = (e: EventRecord) => seen.some((x) => x.meta.eventId === e.eventId);
      const outbox = new Outbox(counted, newPublisher(), log, { instanceId: 'at-once', intervalMs: 60_000 });
      const things = outbox.model.db.collection<{ _id: string }>('things');
      const inThings = (id: string): ReadBack => ({ collection: 'things', filter: { _id: id }, applied: 'present' });
      const atOnce = () => true;
      const [early, sent, refused, partway, failed] = [1, 2, 3, 4, 5].map((n) =>
        eventRecord(Envelope, `ao${n}`, probe(`ao${n}`, n)),
      );
      // Not relaying: held before the write like any announced event (one insert), released after it.
      await outbox.announce([early!], () => things.insertOne({ _id: 'e' }), { readBack: inThings('e'), atOnce });
      expect(inserts()).toBe(1);
      outbox.start();
      try {
        await until('the relay holds the lease', () => outbox.relaying);
        await outbox.flush();
        await until('the held event published', () => delivered(early!));
        // Relaying, the outbox empty: sent once the write is done, nothing stored.
        await outbox.announce([sent!], () => things.insertOne({ _id: 's' }), { readBack: inThings('s'), atOnce });
        await until('sent after its write', () => delivered(sent!));
        expect(inserts()).toBe(1);
        // A write that did not apply, or was refused, sends nothing.
        await outbox.announce([refused!], async () => null, {
          applied: (r) => r !== null,
          readBack: inThings('r'),
          atOnce,
        });
        const reset = () => Promise.reject(new Error('connection reset'));
        await expect(
          outbox.announce([partway!], () => things.insertOne({ _id: 'p' }).then(reset), {
            readBack: inThings('p'),
            atOnce,
          }),
        ).rejects.toThrow('connection reset');
        await expect(outbox.announce([failed!], reset, { readBack: inThings('f'), atOnce })).rejects.toThrow(
          'connection reset',
        );
        // The write that applied before it failed was read back and its event sent; none of these stored.
        await until('the write applied part-way sent', () => delivered(partway!));
        expect(inserts()).toBe(1);
        await outbox.flush();
        const marker = await outbox.add(Envelope, 'ao-marker', probe('ao-marker', 9));
        await until('a later event delivered', () => seen.some((x) => x.meta.eventId === marker));
        expect([delivered(refused!), delivered(failed!)]).toEqual([false, false]);
      } finally {
        await outbox.stop();
      }
    } finally {
      await counted.close();
    }
  });

  it('parks an event Kafka refuses for good, and relays the events behind it', async () => {
    const db = freshDb();
    const seen = await subscribe('parked');
    // Kafka's own refusals are retried forever by the idempotent producer, except the permanent
    // ones; this publisher refuses one key's events the way the broker refuses a record for good.
    const refusing = newPublisher();
    const send = refusing.send.bind(refusing);
    refusing.send = async (records, extra) => {
      if (records.some((r) => r.key === 'refused')) {
        // As kafkajs reports it: the broker's protocol error, wrapped once the retries ran out.
        const refusal = Object.assign(
          new Error('The request included a message larger than the max message size the server will accept'),
          { name: 'KafkaJSProtocolError', type: 'MESSAGE_TOO_LARGE', retriable: false },
        );
        throw Object.assign(new Error(refusal.message), {
          name: 'KafkaJSNumberOfRetriesExceeded',
          cause: refusal,
          originalError: refusal,
        });
      }
      return send(records, extra);
    };
    const outbox = new Outbox(db, refusing, log, { instanceId: 'parker', intervalMs: 50 });
    const before = await outbox.add(Envelope, 'fine', probe('fine', 1));
    const refused = await outbox.add(Envelope, 'refused', probe('refused', 1));
    const after = await outbox.add(Envelope, 'fine', probe('fine', 2));
    outbox.start();
    await until('events around the refused one delivered', () =>
      [before, after].every((id) => seen.some((s) => s.meta.eventId === id)),
    );
    await outbox.stop();
    const parked = await outbox.parked.find({}).lean();
    expect(parked.map((p) => ({ id: p._id, error: p.error }))).toEqual([
      { id: refused, error: expect.stringContaining('larger than the max message size') },
    ]);
    expect(await outbox.model.countDocuments({})).toBe(0);
    await expect(
      outbox.add(Envelope, 'big', {
        change: { $case: 'apiKeyChanged', apiKeyChanged: { keyId: 'x'.repeat(300_000), tenantId: '1' } },
      }),
    ).rejects.toThrow(/at most/);
  });

  it('keeps events through a Kafka outage (the producer gives up) and relays them, in order, once it is back', async () => {
    const db = freshDb();
    const seen = await subscribe('outage');
    // Kafka away: every send fails the way kafkajs fails once its retries run out.
    let away = true;
    const flaky = newPublisher();
    const send = flaky.send.bind(flaky);
    flaky.send = async (records, extra) => {
      if (away) {
        const lost = Object.assign(new Error('Connection error: connect ECONNREFUSED 127.0.0.1:9092'), {
          name: 'KafkaJSConnectionError',
          retriable: true,
        });
        throw Object.assign(new Error(lost.message), {
          name: 'KafkaJSNumberOfRetriesExceeded',
          cause: lost,
          originalError: lost,
        });
      }
      return send(records, extra);
    };
    const outbox = new Outbox(db, flaky, log, { instanceId: 'outage', intervalMs: 50 });
    const ids = [await outbox.add(Envelope, 'k', probe('k', 1)), await outbox.add(Envelope, 'k', probe('k', 2))];
    outbox.start();
    await new Promise((r) => setTimeout(r, 500));
    expect(await outbox.parked.countDocuments({})).toBe(0);
    expect(await outbox.model.countDocuments({})).toBe(2);
    away = false;
    await until('both delivered', () => ids.every((id) => seen.some((s) => s.meta.eventId === id)));
    expect(seen.filter((s) => ids.includes(s.meta.eventId)).map((s) => s.meta.eventId)).toEqual(ids);
    await outbox.stop();
    expect(await outbox.parked.countDocuments({})).toBe(0);
  });

  it('settles what a crashed writer left held when its hold ends, by reading its write back', async () => {
    const db = freshDb();
    const seen = await subscribe('left');
    const dead = new Outbox(db, publisher, log, { instanceId: 'dead', holdMs: 300 });
    const things = dead.model.db.collection<{ _id: string }>('things');
    const inThings = (id: string): ReadBack => ({ collection: 'things', filter: { _id: id }, applied: 'present' });
    // The writer stored the events, wrote (or not), and died before settling them.
    const [done, undone, unreadable] = ['x', 'y', 'z'].map((k) => eventRecord(Envelope, k, probe(k, 1)));
    const never = new Promise<never>(() => undefined);
    void dead.announce([done!], () => things.insertOne({ _id: 'x' }).then(() => never), { readBack: inThings('x') });
    void dead.announce([undone!], () => never, { readBack: inThings('y') });
    // A read-back the store cannot answer: the event stays held, and so do its key's later events.
    void dead.announce([unreadable!], () => never, {
      readBack: { collection: 'things', filter: { $bogus: 1 }, applied: 'present' },
    });
    await until('stored', async () => (await dead.model.countDocuments({})) === 3);
    const relay = new Outbox(db, publisher, log, { instanceId: 'alive', intervalMs: 50, holdMs: 60_000 });
    relay.start();
    const delivered = (id: string) => seen.some((s) => s.meta.eventId === id);
    await until('the done write announced', () => delivered(done!.eventId));
    const afterY = await relay.add(Envelope, 'y', probe('y', 2));
    const afterZ = await relay.add(Envelope, 'z', probe('z', 2));
    await until('a later event of y delivered', () => delivered(afterY));
    await new Promise((r) => setTimeout(r, 300));
    expect([delivered(undone!.eventId), delivered(unreadable!.eventId), delivered(afterZ)]).toEqual([
      false,
      false,
      false,
    ]);
    expect((await relay.model.find({}).lean()).map((d) => d._id).sort()).toEqual([unreadable!.eventId, afterZ].sort());
    await relay.stop();
  });

  it('sends a poison event to the dead-letter topic with its error, and handles the next one', async () => {
    const dlq = await deadLetters('poison');
    const seen = await subscribe('poison', {
      handler: async (s) => {
        if (s.key === 'fails') throw new Error('cannot apply this event');
      },
    });
    const undecodable = randomUUID();
    await publisher.send([
      {
        eventId: undecodable,
        topic: stream.topic,
        key: 'garbage',
        type: stream.type,
        payload: Buffer.from([0xff, 0xff, 0xff, 0xff]),
      },
    ]);
    const failing = await publisher.publish(Envelope, 'fails', probe('fails', 1));
    const after = await publisher.publish(Envelope, 'fails', probe('fails', 2));
    const good = await publisher.publish(Envelope, 'garbage', probe('garbage', 2));

    await until('the events behind the poison ones handled', () => seen.some((s) => s.meta.eventId === good));
    await until('both poison events dead-lettered', () => dlq.length >= 2);
    const byId = new Map(dlq.map((m) => [m.headers!['event-id']!.toString(), m]));
    expect(byId.get(undecodable)!.headers![DEAD_LETTER_HEADERS.attempts]!.toString()).toBe('1');
    const failed = byId.get(failing)!;
    expect(failed.headers![DEAD_LETTER_HEADERS.error]!.toString()).toContain('cannot apply this event');
    expect(failed.headers![DEAD_LETTER_HEADERS.attempts]!.toString()).toBe('3');
    expect(failed.headers![DEAD_LETTER_HEADERS.group]!.toString()).toBe(group('poison'));
    expect(failed.key!.toString()).toBe('fails');
    // The original event travels unchanged, so it can be replayed.
    expect(probeOf(Envelope.decode(failed.value!))).toEqual({ key: 'fails', n: 1 });
    // The same key's next event was tried too (and failed the same way): nothing stalled.
    await until('next event of the key tried', () => dlq.some((m) => m.headers!['event-id']!.toString() === after));
  });

  it("with concurrency, handles a batch's events at once but each key's in order", async () => {
    let running = 0;
    let most = 0;
    const seen = await subscribe('concurrent', {
      concurrency: 8,
      handler: async () => {
        most = Math.max(most, ++running);
        await new Promise((r) => setTimeout(r, 20));
        running--;
      },
    });
    const keys = ['a', 'b', 'c', 'd', 'e', 'f'];
    for (let n = 1; n <= 10; n++)
      for (const k of keys) await publisher.publish(Envelope, `${k}-${suffix}`, probe(`${k}-${suffix}`, n));
    const mine = (k: string) => seen.filter((s) => s.key === `${k}-${suffix}`);
    // The group reads the topic from its beginning: earlier tests' events come first.
    await until('all delivered', () => keys.every((k) => mine(k).length >= 10));
    for (const k of keys) expect(mine(k).map((s) => s.n)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    // More than one at a time, never two of one key (a key's chain waits for its previous event).
    expect(most).toBeGreaterThan(1);
  });

  it('commits what a batch handled when a stop came while its handlers ran (decision 0154)', async () => {
    const stopSuffix = `${suffix}stop`;
    const StopEnvelope = testEnvelope(stopSuffix);
    await ensureStreams(kafka, [StopEnvelope], { partitions: 1 }, log);
    const groupId = group('stop-mid-batch');
    const subscriber = new EventSubscriber(kafka, {
      group: groupId,
      log,
      publisher,
      fromBeginning: true,
      concurrency: 4,
    });
    let started = 0;
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    subscriber.on(StopEnvelope, async () => {
      started++;
      await gate;
    });
    // In the log before the group joins: its first fetch is one batch of the three.
    for (let n = 1; n <= 3; n++) await publisher.publish(StopEnvelope, `k${n}`, probe(`k${n}`, n));
    subscriber.start();
    await subscriber.waitUntilReady(30_000);
    await until('the batch handled at once', () => started === 3);
    const stopped = subscriber.stop();
    setTimeout(open, 200);
    await stopped;
    const admin = kafka.admin();
    await admin.connect();
    const [committed] = await admin.fetchOffsets({ groupId, topics: [streamOf(StopEnvelope).topic] });
    await admin.disconnect();
    expect(committed!.partitions[0]!.offset).toBe('3');
  });

  it('redelivers the batch of a consumer killed in the middle of it (an idempotent handler applies each event once)', async () => {
    const db = freshDb();
    const groupId = group('crash');
    // A stream of its own, so the batch holds only this test's events, at offsets 0–19.
    const crashSuffix = `${suffix}crash`;
    const CrashEnvelope = testEnvelope(crashSuffix);
    await ensureStreams(kafka, [CrashEnvelope], { partitions: 1 }, log);
    const key = 'crash';
    const ids: string[] = [];
    for (let n = 1; n <= 20; n++) ids.push(await publisher.publish(CrashEnvelope, key, probe(key, n)));

    const run = (crashAt: number) =>
      new Promise<{ code: number | null; signal: NodeJS.Signals | null; output: string }>((resolve) => {
        const child = spawn(
          process.execPath,
          ['--import', 'tsx', path.join(__dirname, 'fixtures/crashing-consumer.ts')],
          {
            env: { ...process.env, DB_NAME: db.name, GROUP: groupId, SUFFIX: crashSuffix, CRASH_AT: String(crashAt) },
            stdio: ['ignore', 'pipe', 'pipe'],
          },
        );
        let output = '';
        child.stdout.on('data', (b: Buffer) => (output += b.toString()));
        child.stderr.on('data', (b: Buffer) => (output += b.toString()));
        const timer = setTimeout(() => child.kill('SIGTERM'), 60_000);
        child.once('exit', (code, signal) => {
          clearTimeout(timer);
          resolve({ code, signal, output });
        });
      });

    const effects = db.collection<{ _id: string }>('effects');
    const deliveries = db.collection<{ _id: string; times: number }>('deliveries');
    const first = await run(11);
    expect({ signal: first.signal, output: first.output }).toEqual({ signal: 'SIGKILL', output: expect.any(String) });
    expect(await effects.countDocuments({ _id: { $in: ids } })).toBe(10);
    // Events that were applied are not all committed: the group starts again before event 11.
    const admin = kafka.admin();
    await admin.connect();
    const [committed] = await admin.fetchOffsets({ groupId, topics: [streamOf(CrashEnvelope).topic] });
    await admin.disconnect();
    expect(Number(committed!.partitions[0]!.offset)).toBeLessThan(10);

    // A new replica of the consumer gets the whole batch again, the first ten included.
    const second = spawn(process.execPath, ['--import', 'tsx', path.join(__dirname, 'fixtures/crashing-consumer.ts')], {
      env: { ...process.env, DB_NAME: db.name, GROUP: groupId, SUFFIX: crashSuffix, CRASH_AT: '0' },
      stdio: 'ignore',
    });
    try {
      await until(
        'every event applied',
        async () => (await effects.countDocuments({ _id: { $in: ids } })) === 20,
        60_000,
      );
    } finally {
      second.kill('SIGTERM');
    }
    // Delivered again (at least once), applied once: the handler keys its effect by the event id.
    const again = await deliveries.countDocuments({ _id: { $in: ids.slice(0, 10) }, times: { $gte: 2 } });
    expect(again).toBeGreaterThan(0);
    expect(await effects.countDocuments({ _id: { $in: ids } })).toBe(20);
  });

  it('with held commits, gives the next member of the group what a member held and never released, and nothing it released (decision 0147)', async () => {
    const heldSuffix = `${suffix}held`;
    const HeldEnvelope = testEnvelope(heldSuffix);
    await ensureStreams(kafka, [HeldEnvelope], { partitions: 1 }, log);
    const groupId = group('held-commits');
    const member = (keep: (n: number) => boolean) => {
      const got: number[] = [];
      const releases: (() => void)[] = [];
      const subscriber = new EventSubscriber(kafka, {
        group: groupId,
        log,
        publisher,
        fromBeginning: true,
        concurrency: 4,
        holdCommits: {},
      });
      subscribers.push(subscriber);
      subscriber.on(HeldEnvelope, async (event, meta) => {
        const { n } = probeOf(event);
        got.push(n);
        const release = meta.hold!();
        if (keep(n)) releases.push(release);
        else release();
      });
      subscriber.start();
      return { subscriber, got, releases };
    };
    // The first member keeps 3 (its work not done), releases the rest as it handles them.
    const first = member((n) => n === 3);
    for (let n = 1; n <= 5; n++) await publisher.publish(HeldEnvelope, `k${n}`, probe(`k${n}`, n));
    await until('the first member handled all five', () => first.got.length === 5);
    await first.subscriber.stop();
    const admin = kafka.admin();
    await admin.connect();
    const committed = async () =>
      Number((await admin.fetchOffsets({ groupId, topics: [streamOf(HeldEnvelope).topic] }))[0]!.partitions[0]!.offset);
    // Committed up to the event held: 1 and 2 are done.
    expect(await committed()).toBe(2);
    // The next member is given 3 again (and what followed it), and releases everything.
    const second = member(() => false);
    await until('the held event delivered again', () => second.got.includes(3));
    expect(second.got).not.toContain(1);
    expect(second.got).not.toContain(2);
    await until('everything committed', async () => (await committed()) === 5);
    await second.subscriber.stop();
    await admin.disconnect();
  });

  it('lets one holder have a lease at a time and hands it over when released or expired', async () => {
    const db = freshDb();
    // A lease counts as held for two thirds of its TTL from the moment acquire() was sent, so a TTL of
    // half a second left a busy machine's slow store round trip (> 333 ms) looking like a lost lease.
    const ttlMs = 3_000;
    const a = new Lease(db, 'job', 'a', ttlMs);
    const b = new Lease(db, 'job', 'b', ttlMs);
    const [gotA, gotB] = await Promise.all([a.acquire(), b.acquire()]);
    expect([gotA, gotB].filter(Boolean)).toHaveLength(1);
    const [holder, waiter] = gotA ? [a, b] : [b, a];
    expect(await holder.acquire()).toBe(true);
    expect(await waiter.acquire()).toBe(false);
    await holder.release();
    expect(await waiter.acquire()).toBe(true);
    // The waiter, now holding, never renews: once its TTL has run out the former holder takes the lease.
    expect(await holder.acquire()).toBe(false);
    await new Promise((r) => setTimeout(r, ttlMs + 100));
    expect(await holder.acquire()).toBe(true);
  });

  it('tells its holder whether another replica contends for it, and forgets a contender gone quiet (decision 0141)', async () => {
    const db = freshDb();
    const ttlMs = 3_000;
    // A replica name with a dot (a host name) is a field of the lease document all the same.
    const holder = new Lease(db, 'job', 'host.a-1', ttlMs);
    const other = new Lease(db, 'job', 'host.b-2', ttlMs);
    expect(await holder.acquire()).toBe(true);
    expect(await holder.acquire()).toBe(true);
    expect(holder.shared).toBe(false);
    // The other replica tries; the holder learns of it when it renews.
    expect(await other.acquire()).toBe(false);
    expect(holder.shared).toBe(false);
    expect(await holder.acquire()).toBe(true);
    expect(holder.shared).toBe(true);
    expect(other.shared).toBe(false);
    const marks = async () =>
      Object.keys(
        ((await db.collection('leases').findOne({ _id: 'job' as never })) as { contenders?: object }).contenders ?? {},
      );
    expect(await marks()).toEqual(['host_b-2']);
    // It stops trying (it stopped or died): once its mark is older than the lease's time, the holder is alone, and the mark goes.
    await new Promise((r) => setTimeout(r, ttlMs + 100));
    expect(holder.shared).toBe(false);
    expect(await holder.acquire()).toBe(true);
    expect(await holder.acquire()).toBe(true);
    expect(await marks()).toEqual([]);
  });
});
