import { Kafka, logLevel, type IHeaders } from 'kafkajs';
import type { Logger } from '../logger';
import { streamTopics } from './stream';
import { fixKafkajsRequestQueueTimer } from './kafkajs-timer-fix';

export interface KafkaSettings {
  brokers: string[];
  clientId: string;
  log: Logger;
  /** How long a silent group member keeps its partitions (`KAFKA_SESSION_TIMEOUT_MS`); see `groupTiming`. */
  sessionTimeoutMs?: number;
}

/**
 * The broker's default session floor (`group.min.session.timeout.ms`), so every Kafka accepts it. A cluster whose
 * brokers allow less can set KAFKA_SESSION_TIMEOUT_MS lower.
 */
export const DEFAULT_SESSION_TIMEOUT_MS = 6_000;

/** Consumer group timing, one set per process (kept beside its Kafka client). */
export interface GroupTiming {
  sessionTimeout: number;
  heartbeatInterval: number;
  rebalanceTimeout: number;
}

const timings = new WeakMap<Kafka, GroupTiming>();

/** The wait before the next try of a start-up step while Kafka is away (topics, producer, a consumer's join). */
export const kafkaRetryDelayMs = (attempt: number): number => Math.min(5_000, 250 * 2 ** (attempt - 1));

/**
 * Consumer group timing for fast recovery (decision 0119): a short session, since a dead member's partitions wait
 * it out; heartbeats every third of it; a rebalance timeout long enough for a batch, not kafkajs's minute. A clean
 * stop leaves the group at once (`EventSubscriber.stop`), so no session is waited out.
 */
export function groupTiming(kafka: Kafka): GroupTiming {
  return timings.get(kafka) ?? timingFor(DEFAULT_SESSION_TIMEOUT_MS);
}

function timingFor(sessionTimeout: number): GroupTiming {
  return {
    sessionTimeout,
    heartbeatInterval: Math.max(100, Math.floor(sessionTimeout / 3)),
    rebalanceTimeout: Math.max(10_000, sessionTimeout * 2),
  };
}

const LEVELS: Record<number, 'error' | 'warn' | 'info' | 'debug'> = {
  [logLevel.ERROR]: 'error',
  [logLevel.WARN]: 'warn',
  [logLevel.INFO]: 'info',
  [logLevel.DEBUG]: 'debug',
};

/**
 * Response errors kafkajs logs as errors though they are retried or handled (a broker settling, two services
 * creating one topic at once): logged at debug.
 */
const EXPECTED_RESPONSE_ERRORS = new Set([
  'The group coordinator is not available',
  "The coordinator is loading and hence can't process requests for this group",
  'This is not the correct coordinator for this group',
  'This server does not host this topic-partition',
  'There is no leader for this topic-partition as we are in the middle of a leadership election',
  'This server is not the leader for that topic-partition', // a topic just created
  'Topic creation errors', // TOPIC_ALREADY_EXISTS: ensureStreams takes it as created, and throws on anything else
]);
const levelOf = (level: number, message: string, error: unknown): 'error' | 'warn' | 'info' | 'debug' =>
  message.startsWith('Response ') && typeof error === 'string' && EXPECTED_RESPONSE_ERRORS.has(error)
    ? 'debug'
    : (LEVELS[level] ?? 'info');

/** A consumer joining while the broker settles crashes and restarts: both logged at info, not error. */
export function kafkaLogLevels(): (
  level: number,
  message: string,
  extra: Record<string, unknown>,
) => 'error' | 'warn' | 'info' | 'debug' {
  const settling = new Set<unknown>();
  return (level, message, extra) => {
    if (message.startsWith('Crash: ') && [...EXPECTED_RESPONSE_ERRORS].some((e) => message.includes(e))) {
      settling.add(extra.groupId);
      return 'info';
    }
    if (message.startsWith('Restarting the consumer') && settling.delete(extra.groupId)) return 'info';
    return levelOf(level, message, extra.error);
  };
}

/**
 * kafkajs (unmaintained) sets a negative timeout on Node 24+ (upstream issue 1751); it acts as 1 ms, as meant.
 * Only that `TimeoutNegativeWarning`, raised from kafkajs, is dropped.
 */
const emitWarning = process.emitWarning.bind(process);
process.emitWarning = (warning: string | Error, ...rest: unknown[]) => {
  const name =
    typeof warning === 'string'
      ? typeof rest[0] === 'string'
        ? rest[0]
        : (rest[0] as { type?: string } | undefined)?.type
      : warning.name;
  if (name === 'TimeoutNegativeWarning' && /[\\/]kafkajs[\\/]/.test(new Error().stack ?? '')) return;
  (emitWarning as (...args: unknown[]) => void)(warning, ...rest);
};

export function createKafka(s: KafkaSettings): Kafka {
  fixKafkajsRequestQueueTimer();
  const kafka = new Kafka({
    clientId: s.clientId,
    brokers: s.brokers,
    connectionTimeout: 3_000,
    retry: { initialRetryTime: 200, retries: 8 },
    logLevel: logLevel.WARN,
    logCreator: () => {
      const levelOfLine = kafkaLogLevels();
      return ({ level, log }) => {
        const { message, ...extra } = log;
        s.log[levelOfLine(level, message, extra)]({ kafka: extra }, message);
      };
    },
  });
  timings.set(kafka, timingFor(s.sessionTimeoutMs ?? DEFAULT_SESSION_TIMEOUT_MS));
  return kafka;
}

/** An event as stored in an outbox and sent to Kafka: the encoded envelope plus what names it. */
export interface EventRecord {
  /** Stable id: a redelivery carries the same id, so consumers can skip it. */
  eventId: string;
  topic: string;
  /** Partition key: events of one key (a tenant's wallet, a call) keep their order. */
  key: string;
  /** The envelope's full proto name. */
  type: string;
  payload: Uint8Array;
  /** Trace context of the code that made the event, so the consumer's work joins its trace. */
  traceHeaders?: Record<string, string>;
}

export interface StreamTopicSettings {
  /** Partitions of each new topic. Fixed once created: adding partitions reorders keys. */
  partitions: number;
  /** -1: the broker's default. */
  replicationFactor?: number;
}

/**
 * Creates the owned streams' topics and dead-letter topics if missing. Consumers wait (`waitForTopics`), except a
 * reader that must run before the owner exists (billing and leads create telephony's call stream).
 */
export async function ensureStreams(
  kafka: Kafka,
  envelopes: readonly { readonly $type: string }[],
  settings: StreamTopicSettings,
  log: Logger,
): Promise<void> {
  const wanted = envelopes.flatMap((e) => {
    const s = streamTopics(e);
    return [s.topic, s.deadLetterTopic];
  });
  // Two services creating a shared topic at once: the loser may see it before its partitions have leaders.
  for (let attempt = 1; ; attempt++) {
    try {
      await ensureTopics(kafka, wanted, settings, log);
      return;
    } catch (err) {
      const e = err as { retriable?: boolean; type?: string };
      if (!(e.retriable || e.type === 'TOPIC_ALREADY_EXISTS') || attempt >= 10) throw err;
      // Info, not warn: a clean start logs no warning.
      log.info({ err, attempt }, 'topics not ready yet; trying again');
      await new Promise((r) => setTimeout(r, 250 * attempt));
    }
  }
}

async function ensureTopics(kafka: Kafka, wanted: string[], settings: StreamTopicSettings, log: Logger): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const existing = new Set(await admin.listTopics());
    const missing = wanted.filter((t) => !existing.has(t));
    if (missing.length) {
      await admin.createTopics({
        waitForLeaders: true,
        topics: missing.map((topic) => ({
          topic,
          numPartitions: settings.partitions,
          replicationFactor: settings.replicationFactor ?? -1,
        })),
      });
      log.info(
        { topics: missing, partitions: settings.partitions },
        'created the topics of the streams this service owns',
      );
    }
    const present = wanted.filter((t) => existing.has(t));
    if (present.length) {
      const meta = await admin.fetchTopicMetadata({ topics: present });
      for (const t of meta.topics) {
        if (t.partitions.length !== settings.partitions) {
          // Never changed automatically: more partitions would move keys and break their order.
          log.warn(
            { topic: t.name, partitions: t.partitions.length, configured: settings.partitions },
            'topic partition count differs from the setting',
          );
        }
      }
    }
  } finally {
    await admin.disconnect();
  }
}

/** Resolves once every topic exists or `stopped()` says to give up; rejects after the timeout. */
export async function waitForTopics(
  kafka: Kafka,
  topics: string[],
  timeoutMs: number,
  log: Logger,
  stopped: () => boolean = () => false,
): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const until = Date.now() + timeoutMs;
    let warned = false;
    for (;;) {
      const existing = new Set(await admin.listTopics());
      const missing = topics.filter((t) => !existing.has(t));
      if (missing.length === 0 || stopped()) return;
      if (Date.now() > until)
        throw new Error(`topics ${missing.join(', ')} do not exist; their owning service creates them`);
      if (!warned) {
        log.warn({ topics: missing }, 'waiting for the owning service to create topics');
        warned = true;
      }
      await new Promise((r) => setTimeout(r, 500));
    }
  } finally {
    await admin.disconnect();
  }
}

/** Removes this prefix's broadcast groups with no member: those left by replicas that died. */
export async function removeIdleBroadcastGroups(kafka: Kafka, prefix: string, log: Logger): Promise<string[]> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const { groups } = await admin.listGroups();
    const candidates = groups.map((g) => g.groupId).filter((id) => id.startsWith(prefix));
    if (candidates.length === 0) return [];
    const described = await admin.describeGroups(candidates);
    const idle = described.groups.filter((g) => g.state === 'Empty' || g.state === 'Dead').map((g) => g.groupId);
    if (idle.length === 0) return [];
    try {
      await admin.deleteGroups(idle);
      log.info({ groups: idle }, 'removed broadcast groups left by stopped replicas');
      return idle;
    } catch (err) {
      log.warn({ err, groups: idle }, 'could not remove idle broadcast groups');
      return [];
    }
  } finally {
    await admin.disconnect();
  }
}

export const header = (headers: IHeaders | undefined, name: string): string | undefined => {
  const v = headers?.[name];
  if (v === undefined) return undefined;
  return Array.isArray(v) ? v[0]?.toString() : v.toString();
};

export function headersAsStrings(headers: IHeaders | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of Object.keys(headers ?? {})) {
    const v = header(headers, name);
    if (v !== undefined) out[name] = v;
  }
  return out;
}
