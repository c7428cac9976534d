/**
 * Events produced and Kafka deliveries over a window, read from the broker (black-box, like the
 * store's operations): produced = the growth of every topic's end offsets; delivered = for every
 * consumer group, the messages produced on each topic it reads (it has committed offsets on): each is
 * delivered to it, whether or not it has read them all by the window's end (a group still working
 * off a backlog would otherwise count short). Dead-letter and internal topics count like any other.
 */
import { Kafka, logLevel } from 'kafkajs';

export interface KafkaFlow {
  /** Messages written, by topic. */
  produced: Record<string, number>;
  /** Messages read and committed, by `group ← topic`. */
  delivered: Record<string, number>;
}

export interface KafkaFlowMeter {
  snapshot(): Promise<KafkaFlow>;
  close(): Promise<void>;
}

export async function kafkaFlowMeter(brokers: string): Promise<KafkaFlowMeter> {
  const admin = new Kafka({
    clientId: 'bench-kafka-flow',
    brokers: brokers.split(','),
    logLevel: logLevel.NOTHING,
  }).admin();
  await admin.connect();
  return {
    async snapshot() {
      const topics = (await admin.listTopics()).filter((t) => !t.startsWith('__'));
      const produced: Record<string, number> = {};
      for (const topic of topics)
        produced[topic] = (await admin.fetchTopicOffsets(topic)).reduce((n, p) => n + Number(p.high), 0);
      const delivered: Record<string, number> = {};
      for (const { groupId } of (await admin.listGroups()).groups) {
        for (const t of await admin.fetchOffsets({ groupId, topics })) {
          const committed = t.partitions.reduce((n, p) => n + Math.max(0, Number(p.offset)), 0);
          if (committed > 0) delivered[`${groupId} ← ${t.topic}`] = committed;
        }
      }
      return { produced, delivered };
    },
    close: () => admin.disconnect(),
  };
}

const delta = (before: Record<string, number>, after: Record<string, number>) =>
  Object.fromEntries(
    Object.entries(after)
      .map(([k, v]) => [k, v - (before[k] ?? 0)] as const)
      .filter(([, v]) => v > 0),
  );
const sum = (xs: Record<string, number>) => Object.values(xs).reduce((n, x) => n + x, 0);

/** Per operation: events produced and deliveries, each with its largest parts. */
export function flowPerOperation(
  before: KafkaFlow,
  after: KafkaFlow,
  operations: number,
): { produced: number; delivered: number; text: string } {
  const produced = delta(before.produced, after.produced);
  const delivered = Object.fromEntries(
    Object.keys(after.delivered)
      .map((pair) => [pair, produced[pair.split(' ← ')[1]!] ?? 0] as const)
      .filter(([, n]) => n > 0),
  );
  const parts = (xs: Record<string, number>) =>
    Object.entries(xs)
      .sort(([, a], [, b]) => b - a)
      .map(([k, v]) => `${k} ${(v / operations).toFixed(1)}`)
      .join(', ');
  const p = sum(produced) / operations;
  const d = sum(delivered) / operations;
  return {
    produced: p,
    delivered: d,
    text: `events produced ${p.toFixed(1)} (${parts(produced)}); deliveries ${d.toFixed(1)} (${parts(delivered)})`,
  };
}
