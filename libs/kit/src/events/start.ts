import type { Kafka } from 'kafkajs';
import type { Connection } from 'mongoose';
import type { Lifecycle } from '../lifecycle';
import type { Logger } from '../logger';
import { ensureIndexes } from '../mongo/connect';
import type { Lease } from '../mongo/lease';
import { createKafka, ensureStreams, kafkaRetryDelayMs } from './kafka';
import { Outbox } from './outbox';
import { EventPublisher } from './publisher';

/** The settings `commonEnv` gives every process. */
export interface EventSettings {
  KAFKA_BROKERS: string[];
  INSTANCE_ID: string;
  KAFKA_TOPIC_PARTITIONS: number;
  KAFKA_REPLICATION_FACTOR: number;
  KAFKA_SESSION_TIMEOUT_MS: number;
}

interface EventsOptions {
  /** The process's name: its Kafka client id is `<service>-<INSTANCE_ID>`. */
  service: string;
  settings: EventSettings;
  /** Streams whose topics this process creates: its own, and those it reads before their owner may exist. */
  streams: readonly { readonly $type: string }[];
  log: Logger;
  lifecycle: Lifecycle;
}

/** The outbox's store, and optionally the service's singleton-job lease for its relay to share. */
interface OutboxPlacement {
  outboxOn: Connection;
  outboxLease?: Lease;
}

/** What `startEvents` gives: the Kafka client (consumers join with it), the producer, and the outbox when asked. */
export interface StartedEvents {
  kafka: Kafka;
  publisher: EventPublisher;
}

/**
 * A process's Kafka side: the client, its topics and producer (in the background) and, given `outboxOn`, the outbox
 * relay once the store's indexes are built. Stopped in reverse through the lifecycle.
 */
export async function startEvents(o: EventsOptions & OutboxPlacement): Promise<StartedEvents & { outbox: Outbox }>;
export async function startEvents(o: EventsOptions): Promise<StartedEvents>;
export async function startEvents(
  o: EventsOptions & Partial<OutboxPlacement>,
): Promise<StartedEvents & { outbox?: Outbox }> {
  const { settings, log, lifecycle } = o;
  const kafka = createKafka({
    brokers: settings.KAFKA_BROKERS,
    clientId: `${o.service}-${settings.INSTANCE_ID}`,
    log,
    sessionTimeoutMs: settings.KAFKA_SESSION_TIMEOUT_MS,
  });
  const publisher = new EventPublisher(kafka);
  // In the background until Kafka answers: the process serves while Kafka is away (decision 0119).
  let stopping = false;
  const preparing = (async () => {
    for (let attempt = 1; !stopping; attempt++) {
      try {
        await ensureStreams(
          kafka,
          o.streams,
          { partitions: settings.KAFKA_TOPIC_PARTITIONS, replicationFactor: settings.KAFKA_REPLICATION_FACTOR },
          log,
        );
        await publisher.connect();
        return;
      } catch (err) {
        const delayMs = kafkaRetryDelayMs(attempt);
        log.warn(
          { err, attempt, delayMs },
          'Kafka is not ready for this process yet (its topics, the producer); trying again',
        );
        await new Promise((r) => setTimeout(r, delayMs));
      }
    }
  })();
  lifecycle.onStop('kafka producer', async () => {
    stopping = true;
    await preparing;
    await publisher.disconnect();
  });
  if (!o.outboxOn) return { kafka, publisher };
  const outbox = new Outbox(o.outboxOn, publisher, log, {
    instanceId: settings.INSTANCE_ID,
    service: o.service,
    lease: o.outboxLease,
  });
  await ensureIndexes(o.outboxOn);
  outbox.start();
  lifecycle.onStop('outbox', () => outbox.stop());
  return { kafka, publisher, outbox };
}
