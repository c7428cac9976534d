// Over 300 lines because consuming, retries, dead-lettering and lag are one loop per partition with shared invariants.
import { context, propagation } from '@opentelemetry/api';
import type { Consumer, Kafka, KafkaMessage, Offsets } from 'kafkajs';
import type { Logger } from '../logger';
import { cachedRead, serviceMetrics, type ObservedGauge, type TypedCounter } from '../telemetry/metrics';
import { groupTiming, header, kafkaRetryDelayMs, headersAsStrings, waitForTopics } from './kafka';
import { HeldOffsets } from './held-offsets';
import { LagReader } from './lag';
import { EVENT_ID_HEADER, EVENT_TYPE_HEADER, type EventPublisher } from './publisher';
import { groupLabel, streamOf, type MessageCodec, type Stream } from './stream';

/** Where an event came from; `eventId` is stable across redeliveries. */
export interface EventMeta {
  eventId: string;
  key: string | undefined;
  topic: string;
  partition: number;
  offset: string;
  /** 1 on the first try of this delivery. */
  attempt: number;
  /** With `holdCommits`: keeps the event uncommitted until the function given back is called (decision 0147). */
  hold?: () => () => void;
}

export type EventHandler<T> = (event: T, meta: EventMeta) => Promise<void>;

export interface RetryPolicy {
  /** Tries per delivery before the event goes to the dead-letter topic. */
  attempts: number;
  initialDelayMs: number;
  maxDelayMs: number;
}

export interface SubscriberOptions {
  /** From `consumerGroup` or `broadcastGroup`. */
  group: string;
  log: Logger;
  /** Sends dead letters. */
  publisher: EventPublisher;
  retry?: RetryPolicy;
  /** Whether a group with no committed offset starts at the topic's beginning (default: misses nothing). */
  fromBeginning?: boolean;
  /** How long to wait for the owning service to create the topics. */
  topicWaitMs?: number;
  /** A broadcast group of this replica alone: removed from the cluster when the subscriber stops. */
  removeGroupOnStop?: boolean;
  /**
   * Events of one fetched batch handled at once (default 1). Same-key events still go in order, and offsets are
   * committed up to the first unhandled event, at most every `COMMIT_EVERY_MS` (decision 0154). For idempotent
   * handlers insensitive to order across keys.
   */
  concurrency?: number;
  /** With `concurrency`: false lets same-key events run at once too, for order-free effects (webhook fan-out). */
  keyOrder?: boolean;
  /**
   * With `concurrency`: a handler may keep its event uncommitted past its return (`meta.hold`) for in-memory work, so
   * a dead replica's next partition owner gets that work again (decision 0147). Past `maxHeld` holds (50,000)
   * fetching pauses until half are released; `revoked` hears of lost partitions, whose held events move on.
   */
  holdCommits?: { maxHeld?: number; revoked?: (topic: string, partitions: readonly number[]) => void };
}

export const DEAD_LETTER_HEADERS = {
  error: 'dlq-error',
  group: 'dlq-group',
  topic: 'dlq-source-topic',
  partition: 'dlq-source-partition',
  offset: 'dlq-source-offset',
  attempts: 'dlq-attempts',
  failedAt: 'dlq-failed-at',
} as const;

const DEFAULT_RETRY: RetryPolicy = { attempts: 5, initialDelayMs: 200, maxDelayMs: 5_000 };
/** With `concurrency`, handled and released offsets are committed together this often at most (0147, 0154). */
const COMMIT_EVERY_MS = 200;
const DEFAULT_MAX_HELD = 50_000;

/** A consumer's lag is read from Kafka at most this often (only while metrics are exported). */
const LAG_TTL_MS = 10_000;

/** Attributes of the consumer metrics: the group (`groupLabel`) and the topic, both a fixed set. */
type ConsumerAttributes = { group: string; topic: string };

class Stopping extends Error {}

/** At most `n` tasks at once. */
class Slots {
  private free: number;
  private readonly waiting: (() => void)[] = [];
  constructor(n: number) {
    this.free = n;
  }
  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.free > 0) this.free--;
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    try {
      return await task();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.free++;
    }
  }
}

/**
 * Consumes event streams by their envelopes, in the producer's trace context. A failing handler is retried with
 * backoff, then dead-lettered so a poison event never stalls its partition. Offsets are committed after handling
 * (at least once), so handlers key their effect by what the event names (decision 0011).
 */
export class EventSubscriber {
  private readonly consumer: Consumer;
  private readonly handlers = new Map<string, { stream: Stream; handler: EventHandler<unknown> }>();
  private readonly retry: RetryPolicy;
  private joined = false;
  private stopping = false;
  private starting: Promise<void> | undefined;
  /** The partitions this member holds, by topic, from its last join. */
  private assignment = new Map<string, readonly number[]>();
  private readonly lagReader: LagReader;
  private lagGauge: ObservedGauge | undefined;
  private readonly deadLettered: TypedCounter<ConsumerAttributes>;
  private readonly retries: TypedCounter<ConsumerAttributes>;
  /** With `concurrency`: what may be committed, the pending commit, and whether fetching is paused. */
  private readonly held: HeldOffsets | undefined;
  private heldCommit: { timer?: NodeJS.Timeout; sending?: Promise<void>; paused: boolean } = { paused: false };

  constructor(
    private readonly kafka: Kafka,
    private readonly opts: SubscriberOptions,
  ) {
    this.retry = opts.retry ?? DEFAULT_RETRY;
    this.lagReader = LagReader.of(kafka);
    const m = serviceMetrics('events');
    this.deadLettered = m.counter('dead_lettered', {
      description: 'Events a consumer moved to the dead-letter topic after its tries',
      unit: '{event}',
    });
    this.retries = m.counter('retries', { description: 'Event handler failures tried again', unit: '{event}' });
    this.consumer = kafka.consumer({
      groupId: opts.group,
      allowAutoTopicCreation: false,
      // Data ends the broker's wait at once, but a stop waits for the fetch in flight: longer delays every shutdown.
      maxWaitTimeInMs: 1_000,
      ...groupTiming(kafka),
      // kafkajs decides to restart a crashed consumer after awaiting its disconnect: without this check a stop
      // meanwhile found no restart to cancel and the consumer ran on past it. Retries: kafkajs's default.
      retry: { retries: 5, restartOnFailure: () => Promise.resolve(!this.stopping) },
    });
    if (opts.holdCommits && (opts.concurrency ?? 1) <= 1)
      throw new Error('holdCommits needs concurrency above 1 (its batches commit what was released)');
    this.held = (opts.concurrency ?? 1) > 1 ? new HeldOffsets() : undefined;
    this.consumer.on(this.consumer.events.GROUP_JOIN, ({ payload }) => {
      this.joined = true;
      this.assignment = new Map(Object.entries(payload.memberAssignment));
      if (this.held) this.heldAssigned();
    });
    // An unrecoverable crash makes the process unready, so the orchestrator replaces it rather than run deaf.
    this.consumer.on(this.consumer.events.CRASH, ({ payload }) => {
      if (!payload.restart && !this.stopping) {
        this.joined = false;
        this.assignment = new Map();
        // Its partitions are another member's now, with the events this one held.
        if (this.held) this.heldAssigned();
        opts.log.error({ err: payload.error, group: opts.group }, 'consumer crashed and will not restart');
      }
    });
  }

  /**
   * `voiceapi.events.group.lag`: the group's uncommitted messages of each subscribed topic, read from the broker
   * (every partition, held by this member or not): every member reports the same figure, and a group that stopped
   * consuming shows it growing. Read at most every `LAG_TTL_MS`.
   * Beside it, counters `voiceapi.events.dead_lettered` and `voiceapi.events.retries`.
   */
  private observeLag(): void {
    const label = groupLabel(this.opts.group);
    const read = cachedRead(LAG_TTL_MS, () =>
      this.lagReader.lag(this.opts.group, [...this.handlers.keys()], this.opts.fromBeginning ?? true),
    );
    this.lagGauge = serviceMetrics('events').gauge<ConsumerAttributes>(
      'group.lag',
      {
        description:
          "Messages of a subscribed topic the consumer's group has not committed, committed offsets against the log end (every member reports the group's figure)",
        unit: '{message}',
      },
      async () => {
        try {
          return [...(await read())].map(([topic, lag]) => ({ value: lag, attributes: { group: label, topic } }));
        } catch (err) {
          this.opts.log.debug({ err, group: this.opts.group }, 'consumer lag could not be read for the metrics');
          throw err;
        }
      },
    );
  }

  /** Handles the events of the envelope's stream. Call before `start`. */
  on<T>(envelope: MessageCodec<T>, handler: EventHandler<T>): this {
    const stream = streamOf(envelope);
    this.handlers.set(stream.topic, { stream, handler: handler as EventHandler<unknown> });
    return this;
  }

  /** True once the consumer has joined its group. */
  get ready(): boolean {
    return this.joined;
  }

  /**
   * Starts consuming in the background and returns at once, so the process serves while a join waits (possibly
   * out a dead member's session). Tried again with backoff until it succeeds; `ready` says when joined.
   */
  start(): void {
    if (this.starting) return;
    this.lagReader.use();
    this.observeLag();
    // Each subscribed topic's series exist at 0 from the start: a failure is then a rise, and a renamed instrument
    // shows as missing rather than as quiet.
    const group = groupLabel(this.opts.group);
    for (const topic of this.handlers.keys()) {
      this.retries.add(0, { group, topic });
      this.deadLettered.add(0, { group, topic });
    }
    this.starting = this.startUntilRunning();
  }

  private async startUntilRunning(): Promise<void> {
    for (let attempt = 1; !this.stopping; attempt++) {
      try {
        await this.run();
        return;
      } catch (err) {
        if (this.stopping) return;
        const delayMs = kafkaRetryDelayMs(attempt);
        this.opts.log.warn({ err, group: this.opts.group, attempt, delayMs }, 'consumer could not start; trying again');
        // A half-started consumer (connected, not running) is closed before the next try.
        await this.consumer
          .disconnect()
          .catch((e: unknown) =>
            this.opts.log.debug({ err: e, group: this.opts.group }, 'disconnect after a failed start'),
          );
        await this.pause(delayMs).catch(() => undefined); // a stop during the wait ends the loop above
      }
    }
  }

  private async run(): Promise<void> {
    const topics = [...this.handlers.keys()];
    await waitForTopics(this.kafka, topics, this.opts.topicWaitMs ?? 60_000, this.opts.log, () => this.stopping);
    if (this.stopping) return;
    await this.consumer.connect();
    await this.consumer.subscribe({ topics, fromBeginning: this.opts.fromBeginning ?? true });
    const concurrency = this.opts.concurrency ?? 1;
    if (concurrency <= 1) {
      await this.consumer.run({
        // eslint-disable-next-line @typescript-eslint/unbound-method -- kafkajs passes closures, destructured as its docs do
        eachMessage: async ({ topic, partition, message, heartbeat }) =>
          this.handle(topic, partition, message, heartbeat),
      });
      return;
    }
    const held = this.held!;
    await this.consumer.run({
      eachBatchAutoResolve: false,
      // Not kafkajs's commit after every batch: this subscriber commits up to the oldest event still open, at most
      // every COMMIT_EVERY_MS (`commitHeld`, decision 0154).
      autoCommit: false,
      // eslint-disable-next-line @typescript-eslint/unbound-method -- kafkajs passes closures, destructured as its docs do
      eachBatch: async ({ batch, resolveOffset, heartbeat, commitOffsetsIfNecessary }) => {
        const slots = new Slots(concurrency);
        const byKey = new Map<string, Promise<void>>();
        const handled = batch.messages.map((m) => {
          const close = held.open(batch.topic, batch.partition, m.offset);
          const key = (this.opts.keyOrder === false ? undefined : m.key?.toString()) ?? `offset:${m.offset}`;
          const after = byKey.get(key) ?? Promise.resolve();
          const done = after.then(() => slots.run(() => this.handle(batch.topic, batch.partition, m, heartbeat)));
          // Closed once handled, in whatever order; a handler cut short by a stop leaves its event open.
          void done.then(close).catch(() => undefined);
          // Only orders the key's next event; this event's failure is thrown through `handled` below.
          byKey.set(
            key,
            done.catch(() => undefined),
          );
          return done;
        });
        try {
          for (let i = 0; i < handled.length; i++) {
            await handled[i];
            resolveOffset(batch.messages[i]!.offset);
            await heartbeat(); // throttled by kafkajs to the heartbeat interval
          }
        } finally {
          // Whatever was handled in order stays handled, even when a stop cut the batch short.
          await Promise.allSettled(handled);
          // Stopping: what this batch released is committed before the group is left.
          // (Through the batch's own commit: the consumer's refuses once a stop began.)
          if (this.stopping) await this.commitHeld(commitOffsetsIfNecessary).catch(() => undefined);
          else this.heldChanged();
        }
      },
    });
  }

  async waitUntilReady(timeoutMs: number): Promise<void> {
    const until = Date.now() + timeoutMs;
    while (!this.joined) {
      if (Date.now() > until) throw new Error(`consumer group ${this.opts.group} did not join within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Leaves the group at once (its partitions go to the other members without a session's wait). */
  async stop(): Promise<void> {
    this.stopping = true;
    // What was released is committed before the group is left: the next owner starts after it.
    if (this.held) {
      clearTimeout(this.heldCommit.timer);
      await this.commitHeld().catch(() => undefined);
    }
    await this.consumer.disconnect();
    // A start under way cannot be cut short: once it ends, a consumer it left running is stopped too.
    if (this.starting) {
      await this.starting;
      await this.consumer.disconnect();
    }
    this.joined = false;
    this.assignment = new Map();
    if (this.lagGauge) {
      // The SDK repeats its last values until the process ends: stopped consumers belong to a stopping process.
      this.lagGauge.stop();
      this.lagGauge = undefined;
      await this.lagReader.release();
    }
    if (this.opts.removeGroupOnStop) {
      const admin = this.kafka.admin();
      try {
        await admin.connect();
        await admin.deleteGroups([this.opts.group]);
      } catch (err) {
        this.opts.log.warn({ err, group: this.opts.group }, "could not remove this replica's broadcast group");
      } finally {
        await admin
          .disconnect()
          .catch((err: unknown) =>
            this.opts.log.debug({ err, group: this.opts.group }, 'admin client did not disconnect'),
          );
      }
    }
  }

  /** Held events changed: one commit for them all within `COMMIT_EVERY_MS`, and the pause asked again. */
  private heldChanged(): void {
    this.pauseForHeld();
    this.heldCommit.timer ??= setTimeout(() => {
      this.heldCommit.timer = undefined;
      this.commitHeld().catch((err: unknown) => {
        // A group rebalancing or away: tried again shortly (an idle group has no next change to ask).
        this.opts.log.debug({ err, group: this.opts.group }, 'held offsets not committed; trying again');
        if (!this.stopping) this.heldChanged();
      });
    }, COMMIT_EVERY_MS);
  }

  /**
   * Pauses fetching past `maxHeld` holds, resumes under half; asked again after a rejoin (a restarted consumer
   * forgot its pause). Never throws: a consumer between runs refuses both, and the next change asks again.
   */
  private pauseForHeld(rejoined = false): void {
    const held = this.held!;
    const max = this.opts.holdCommits?.maxHeld ?? DEFAULT_MAX_HELD;
    const topics = [...this.handlers.keys()].map((topic) => ({ topic }));
    const pause = held.heldCount >= max || (this.heldCommit.paused && held.heldCount >= max / 2);
    if (pause === this.heldCommit.paused && !(pause && rejoined)) return;
    try {
      if (pause) this.consumer.pause(topics);
      else this.consumer.resume(topics);
      this.heldCommit.paused = pause;
    } catch (err) {
      this.opts.log.debug({ err, group: this.opts.group }, 'held events: fetching not paused or resumed yet');
    }
  }

  /** The partitions held changed: those lost are forgotten and reported, the pause asked again. */
  private heldAssigned(): void {
    for (const { topic, partitions } of this.held!.keepOnly(this.assignment))
      this.opts.holdCommits?.revoked?.(topic, partitions);
    this.pauseForHeld(true);
  }

  /** Commits each partition up to its oldest event still held, after the commit before it. */
  private commitHeld(inBatch?: (offsets: Offsets) => Promise<void>): Promise<void> {
    const next = (this.heldCommit.sending ?? Promise.resolve()).then(async () => {
      const offsets = this.held!.committable();
      if (offsets.length === 0 || !this.joined) return;
      if (!inBatch) return this.consumer.commitOffsets(offsets);
      const topics = new Map<string, { partition: number; offset: string }[]>();
      for (const o of offsets) topics.set(o.topic, [...(topics.get(o.topic) ?? []), o]);
      await inBatch({ topics: [...topics].map(([topic, partitions]) => ({ topic, partitions })) });
    });
    this.heldCommit.sending = next.catch(() => undefined);
    return next;
  }

  private async handle(
    topic: string,
    partition: number,
    message: KafkaMessage,
    heartbeat: () => Promise<void>,
  ): Promise<void> {
    const { group, log } = this.opts;
    const entry = this.handlers.get(topic);
    if (!entry) return;
    const held = this.held;
    const meta: EventMeta = {
      eventId: header(message.headers, EVENT_ID_HEADER) ?? `${topic}/${partition}/${message.offset}`,
      key: message.key?.toString(),
      topic,
      partition,
      offset: message.offset,
      attempt: 1,
      ...(held &&
        this.opts.holdCommits && {
          hold: () => {
            const release = held.hold(topic, partition, message.offset);
            return () => {
              release();
              this.heldChanged();
            };
          },
        }),
    };
    const type = header(message.headers, EVENT_TYPE_HEADER);
    let event: unknown;
    try {
      if (type !== entry.stream.type) throw new Error(`event type ${type ?? '(none)'} is not ${entry.stream.type}`);
      event = entry.stream.envelope.decode(message.value ?? Buffer.alloc(0));
    } catch (err) {
      // Decoding is deterministic: retrying an undecodable event cannot help.
      return this.deadLetter(entry.stream, message, meta, err, 1);
    }

    const parent = propagation.extract(context.active(), headersAsStrings(message.headers));
    for (let attempt = 1; ; attempt++) {
      meta.attempt = attempt;
      try {
        await context.with(parent, () => entry.handler(event, meta));
        return;
      } catch (err) {
        if (attempt >= this.retry.attempts) return this.deadLetter(entry.stream, message, meta, err, attempt);
        this.retries.add(1, { group: groupLabel(group), topic });
        log.warn({ err, topic, eventId: meta.eventId, group, attempt }, 'event handler failed; retrying');
        await this.pause(Math.min(this.retry.maxDelayMs, this.retry.initialDelayMs * 2 ** (attempt - 1)), heartbeat);
      }
    }
  }

  /** Waits between tries (a stop leaves the event uncommitted), heartbeating: a wait can outlast a session. */
  private async pause(ms: number, heartbeat?: () => Promise<void>): Promise<void> {
    const until = Date.now() + ms;
    while (Date.now() < until) {
      if (this.stopping) throw new Stopping('subscriber stopping; the event will be redelivered');
      await new Promise((r) => setTimeout(r, Math.min(100, until - Date.now())));
      await heartbeat?.(); // throttled by kafkajs to the heartbeat interval
    }
  }

  private async deadLetter(
    stream: Stream,
    message: KafkaMessage,
    meta: EventMeta,
    err: unknown,
    attempts: number,
  ): Promise<void> {
    const { group, log, publisher } = this.opts;
    const error = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
    // The original bytes, key and (text) headers travel on, so the event can be replayed as it was.
    await publisher.send(
      [
        {
          eventId: meta.eventId,
          topic: stream.deadLetterTopic,
          key: meta.key ?? '',
          type: header(message.headers, EVENT_TYPE_HEADER) ?? 'unknown',
          payload: message.value ?? Buffer.alloc(0),
          traceHeaders: headersAsStrings(message.headers),
        },
      ],
      () => ({
        [DEAD_LETTER_HEADERS.error]: error.slice(0, 2_000),
        [DEAD_LETTER_HEADERS.group]: group,
        [DEAD_LETTER_HEADERS.topic]: meta.topic,
        [DEAD_LETTER_HEADERS.partition]: String(meta.partition),
        [DEAD_LETTER_HEADERS.offset]: meta.offset,
        [DEAD_LETTER_HEADERS.attempts]: String(attempts),
        [DEAD_LETTER_HEADERS.failedAt]: new Date().toISOString(),
      }),
    );
    this.deadLettered.add(1, { group: groupLabel(group), topic: meta.topic });
    // A redelivery before the commit dead-letters it once more, which is harmless.
    log.error(
      { err, topic: meta.topic, eventId: meta.eventId, group, attempts, deadLetterTopic: stream.deadLetterTopic },
      'event moved to the dead-letter topic',
    );
  }
}
