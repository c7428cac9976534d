import type { Admin, Kafka } from 'kafkajs';

/** A partition's committed offset (`-1`: none committed), as the admin client answers it. */
export interface CommittedOffset {
  partition: number;
  offset: string;
}

/** A partition's first and next offsets (`high` is the high watermark), as the admin client answers them. */
export interface PartitionEnds {
  partition: number;
  low: string;
  high: string;
}

/**
 * A group's uncommitted messages of a topic, over every partition of it (whoever holds them, or nobody);
 * one with no committed offset counts from where the group would start.
 */
export function lagOf(
  committed: readonly CommittedOffset[],
  ends: readonly PartitionEnds[],
  fromBeginning: boolean,
): number {
  let lag = 0;
  for (const end of ends) {
    const at = Number(committed.find((c) => c.partition === end.partition)?.offset ?? -1);
    const from = at >= 0 ? at : fromBeginning ? Number(end.low) : Number(end.high);
    lag += Math.max(0, Number(end.high) - from);
  }
  return lag;
}

/** One admin client per Kafka client for consumers' lag: opened at the first read, closed with the last consumer. */
export class LagReader {
  private static readonly byKafka = new WeakMap<Kafka, LagReader>();

  static of(kafka: Kafka): LagReader {
    let reader = LagReader.byKafka.get(kafka);
    if (!reader) LagReader.byKafka.set(kafka, (reader = new LagReader(kafka)));
    return reader;
  }

  private users = 0;
  private connecting: Promise<Admin> | undefined;

  private constructor(private readonly kafka: Kafka) {}

  use(): void {
    this.users++;
  }

  async release(): Promise<void> {
    if (this.users === 0 || --this.users > 0) return;
    const connecting = this.connecting;
    this.connecting = undefined;
    const admin = await connecting?.catch(() => undefined);
    await admin?.disconnect().catch(() => undefined);
  }

  /**
   * Per topic: the group's uncommitted messages, committed offsets against the log end as the broker has them.
   * Whatever this member holds, so a group whose members crashed, or never joined, shows its lag growing.
   */
  async lag(group: string, topics: readonly string[], fromBeginning: boolean): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    if (topics.length === 0) return out;
    if (this.users === 0) throw new Error('no consumer reads its lag here any more');
    const admin = await this.admin();
    const committed = await admin.fetchOffsets({ groupId: group, topics: [...topics] });
    for (const topic of topics) {
      const ends = await admin.fetchTopicOffsets(topic);
      out.set(topic, lagOf(committed.find((c) => c.topic === topic)?.partitions ?? [], ends, fromBeginning));
    }
    return out;
  }

  private admin(): Promise<Admin> {
    this.connecting ??= (async () => {
      const admin = this.kafka.admin();
      await admin.connect();
      return admin;
    })().catch((err: unknown) => {
      this.connecting = undefined;
      throw err;
    });
    return this.connecting;
  }
}
