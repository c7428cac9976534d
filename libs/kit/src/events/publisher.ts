import { randomUUID } from 'node:crypto';
import { context, propagation } from '@opentelemetry/api';
import { Partitioners, type Kafka, type Message, type Producer } from 'kafkajs';
import type { EventRecord } from './kafka';
import { streamOf, type MessageCodec } from './stream';

export const EVENT_ID_HEADER = 'event-id';
export const EVENT_TYPE_HEADER = 'event-type';

/** Encodes one event of a stream into the record sent (or kept in an outbox). */
export function eventRecord<T>(
  envelope: MessageCodec<T>,
  key: string,
  message: T,
  eventId: string = randomUUID(),
): EventRecord {
  const stream = streamOf(envelope);
  const traceHeaders: Record<string, string> = {};
  propagation.inject(context.active(), traceHeaders);
  return {
    eventId,
    topic: stream.topic,
    key,
    type: stream.type,
    payload: envelope.encode(message).finish(),
    traceHeaders,
  };
}

/** Sends events with an idempotent producer, so a retried send neither duplicates nor reorders a partition's events. */
export class EventPublisher {
  private producer: Producer;
  private connected: Promise<void> | undefined;

  constructor(private readonly kafka: Kafka) {
    this.producer = this.newProducer();
  }

  private newProducer(): Producer {
    return this.kafka.producer({
      idempotent: true,
      maxInFlightRequests: 1,
      allowAutoTopicCreation: false,
      createPartitioner: Partitioners.DefaultPartitioner,
    });
  }

  connect(): Promise<void> {
    // A failed connect is tried again by the next send, not remembered.
    this.connected ??= this.producer.connect().catch((err: unknown) => {
      this.connected = undefined;
      throw err;
    });
    return this.connected;
  }

  /** Publishes one event of the envelope's stream now (no outbox); returns its id. */
  async publish<T>(
    envelope: MessageCodec<T>,
    key: string,
    message: T,
    opts: { eventId?: string } = {},
  ): Promise<string> {
    const record = eventRecord(envelope, key, message, opts.eventId);
    await this.send([record]);
    return record.eventId;
  }

  /** Sends records in order (one key's land in one partition in this order), with `extraHeaders` per record. */
  async send(
    records: readonly EventRecord[],
    extraHeaders?: (r: EventRecord) => Record<string, string>,
  ): Promise<void> {
    if (records.length === 0) return;
    await this.connect();
    const byTopic = new Map<string, Message[]>();
    for (const r of records) {
      const headers: Record<string, string> = {
        ...r.traceHeaders,
        [EVENT_ID_HEADER]: r.eventId,
        [EVENT_TYPE_HEADER]: r.type,
        ...extraHeaders?.(r),
      };
      const list = byTopic.get(r.topic) ?? [];
      list.push({ key: r.key, value: Buffer.from(r.payload), headers });
      byTopic.set(r.topic, list);
    }
    try {
      await this.producer.sendBatch({
        acks: -1,
        topicMessages: [...byTopic].map(([topic, messages]) => ({ topic, messages })),
      });
    } catch (err) {
      // kafkajs advances sequence numbers even for a failed send, so the broker refuses every later one: a new
      // producer is the way out. A record the failed send did write arrives twice (consumers skip by event id).
      if (producerStateLost(err)) await this.renew();
      throw err;
    }
  }

  private async renew(): Promise<void> {
    const old = this.producer;
    this.producer = this.newProducer();
    this.connected = undefined;
    await old.disconnect().catch(() => undefined); // replaced: how it closes changes nothing
  }

  async disconnect(): Promise<void> {
    if (this.connected) await this.producer.disconnect();
  }
}

/** Broker answers that mean the producer's id or sequence state is no longer usable. */
const PRODUCER_STATE_ERRORS = new Set([
  'OUT_OF_ORDER_SEQUENCE_NUMBER',
  'UNKNOWN_PRODUCER_ID',
  'INVALID_PRODUCER_EPOCH',
  'DUPLICATE_SEQUENCE_NUMBER',
]);

const producerStateLost = (err: unknown): boolean => hasKafkaErrorType(err, PRODUCER_STATE_ERRORS);

/** Whether the error, or one it wraps (kafkajs nests the last try's), is a broker answer of one of `types`. */
export function hasKafkaErrorType(err: unknown, types: ReadonlySet<string>): boolean {
  for (
    let e = err as { type?: unknown; cause?: unknown; originalError?: unknown } | undefined, depth = 0;
    e && depth < 5;
    depth++
  ) {
    if (typeof e.type === 'string' && types.has(e.type)) return true;
    e = (e.cause ?? e.originalError) as typeof e;
  }
  return false;
}
