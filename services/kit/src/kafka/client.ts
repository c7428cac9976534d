import { randomUUID } from 'node:crypto';
import { context, propagation } from '@opentelemetry/api';
import {
  Kafka,
  logLevel,
  Partitioners,
  type Consumer,
  type IHeaders,
  type KafkaMessage,
  type Producer,
} from 'kafkajs';
import type { Logger } from '../logger';
import type { Inbox } from './inbox';

export interface KafkaSettings {
  brokers: string[];
  clientId: string;
  log: Logger;
}

const LEVELS: Record<number, 'error' | 'warn' | 'info' | 'debug'> = {
  [logLevel.ERROR]: 'error',
  [logLevel.WARN]: 'warn',
  [logLevel.INFO]: 'info',
  [logLevel.DEBUG]: 'debug',
};

export function createKafka(s: KafkaSettings): Kafka {
  return new Kafka({
    clientId: s.clientId,
    brokers: s.brokers,
    connectionTimeout: 3_000,
    retry: { initialRetryTime: 200, retries: 8 },
    logLevel: logLevel.WARN,
    logCreator: () => ({ level, log }) => {
      const { message, ...extra } = log;
      s.log[LEVELS[level] ?? 'info']({ kafka: extra }, message);
    },
  });
}

/**
 * Creates topics that do not exist yet (idempotent), so consumers can subscribe before the first
 * event is produced. Production clusters may pre-create them; this then does nothing.
 */
export async function ensureTopics(kafka: Kafka, topics: string[], numPartitions = 3): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const existing = new Set(await admin.listTopics());
    const missing = topics.filter((t) => !existing.has(t));
    if (missing.length) {
      await admin.createTopics({ waitForLeaders: true, topics: missing.map((topic) => ({ topic, numPartitions })) });
    }
  } finally {
    await admin.disconnect();
  }
}

/** An event as it travels: a protobuf payload plus headers naming it. */
export interface OutgoingEvent {
  topic: string;
  /** Partition key: keeps one tenant's (or one call's) events in order. */
  key: string;
  /** Fully qualified proto message name, e.g. `voiceapi.events.v1.GatewayControlEvent`. */
  type: string;
  payload: Uint8Array;
  /** Stable id: a replay of the same event carries the same id, so consumers can skip it. */
  eventId?: string;
}

export interface IncomingEvent {
  eventId: string;
  type: string;
  key: string | undefined;
  payload: Buffer;
  topic: string;
  partition: number;
  offset: string;
}

const header = (headers: IHeaders | undefined, name: string): string | undefined => {
  const v = headers?.[name];
  if (v === undefined) return undefined;
  return Array.isArray(v) ? v[0]?.toString() : v.toString();
};

/** Producer with `acks: -1` (all in-sync replicas) that stamps event ids and trace context. */
export class EventProducer {
  private readonly producer: Producer;
  private connected: Promise<void> | undefined;

  constructor(kafka: Kafka) {
    this.producer = kafka.producer({ allowAutoTopicCreation: true, createPartitioner: Partitioners.DefaultPartitioner });
  }

  connect(): Promise<void> {
    this.connected ??= this.producer.connect();
    return this.connected;
  }

  async publish(events: OutgoingEvent[]): Promise<void> {
    await this.connect();
    const byTopic = new Map<string, OutgoingEvent[]>();
    for (const e of events) byTopic.set(e.topic, [...(byTopic.get(e.topic) ?? []), e]);
    await this.producer.sendBatch({
      acks: -1,
      topicMessages: [...byTopic].map(([topic, list]) => ({
        topic,
        messages: list.map((e) => {
          const headers: Record<string, string> = {
            'event-id': e.eventId ?? randomUUID(),
            'event-type': e.type,
          };
          propagation.inject(context.active(), headers);
          return { key: e.key, value: Buffer.from(e.payload), headers };
        }),
      })),
    });
  }

  async disconnect(): Promise<void> {
    if (this.connected) await this.producer.disconnect();
  }
}

/**
 * A consumer whose handler runs inside the producer's trace context. Offsets are committed
 * after the handler succeeds, so delivery is at least once: handlers must be idempotent (the
 * event id is there for that).
 */
export class EventConsumer {
  private readonly consumer: Consumer;
  private joined = false;

  constructor(
    kafka: Kafka,
    private readonly groupId: string,
    private readonly log: Logger,
  ) {
    this.consumer = kafka.consumer({ groupId, maxWaitTimeInMs: 500, sessionTimeout: 15_000, heartbeatInterval: 1_000 });
    this.consumer.on(this.consumer.events.GROUP_JOIN, () => {
      this.joined = true;
    });
    // A crash kafkajs will not recover from makes the process unready, so an orchestrator
    // replaces it instead of letting it run deaf to events.
    this.consumer.on(this.consumer.events.CRASH, ({ payload }) => {
      if (!payload.restart) {
        this.joined = false;
        this.log.error({ err: payload.error, group: this.groupId }, 'consumer crashed and will not restart');
      }
    });
  }

  /** True once the consumer has joined its group and is assigned partitions. */
  get ready(): boolean {
    return this.joined;
  }

  async start(
    topics: string[],
    handler: (event: IncomingEvent) => Promise<void>,
    opts: { fromBeginning?: boolean; /** Skip events this group already processed. */ inbox?: Inbox } = {},
  ): Promise<void> {
    const inbox = opts.inbox;
    await this.consumer.connect();
    await this.consumer.subscribe({ topics, fromBeginning: opts.fromBeginning ?? false });
    await this.consumer.run({
      eachMessage: async ({ topic, partition, message }) => {
        const event = toIncoming(topic, partition, message);
        const parent = propagation.extract(context.active(), headersAsStrings(message.headers));
        try {
          if (inbox && (await inbox.seen(this.groupId, event.eventId))) return;
          await context.with(parent, () => handler(event));
          await inbox?.record(this.groupId, event.eventId);
        } catch (err) {
          this.log.error({ err, topic, eventId: event.eventId, group: this.groupId }, 'event handler failed; will retry');
          throw err;
        }
      },
    });
  }

  /** Resolves once the group is joined (or rejects after the timeout). */
  async waitUntilReady(timeoutMs: number): Promise<void> {
    const until = Date.now() + timeoutMs;
    while (!this.joined) {
      if (Date.now() > until) throw new Error(`consumer group ${this.groupId} did not join within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  async stop(): Promise<void> {
    await this.consumer.disconnect();
  }
}

function headersAsStrings(headers: IHeaders | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of Object.keys(headers ?? {})) {
    const v = header(headers, name);
    if (v !== undefined) out[name] = v;
  }
  return out;
}

function toIncoming(topic: string, partition: number, m: KafkaMessage): IncomingEvent {
  return {
    eventId: header(m.headers, 'event-id') ?? `${topic}/${partition}/${m.offset}`,
    type: header(m.headers, 'event-type') ?? 'unknown',
    key: m.key?.toString(),
    payload: m.value ?? Buffer.alloc(0),
    topic,
    partition,
    offset: m.offset,
  };
}
