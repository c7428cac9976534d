/**
 * Committable offsets of a subscriber with `concurrency` (decision 0154). An event is open while being handled or held
 * (`holdCommits`, decision 0147); a failed delivery leaves it open until a redelivery succeeds.
 */
export class HeldOffsets {
  private readonly partitions = new Map<string, Partition>();
  private held = 0;

  /** Opens a delivered event until the function given back is called (handled) and its holds are released. */
  open(topic: string, partition: number, offset: string): () => void {
    const p = this.partitionOf(topic, partition);
    const at = BigInt(offset);
    const entry = p.open.get(at) ?? { handling: false, holds: 0 };
    entry.handling = true;
    p.open.set(at, entry);
    if (at + 1n > p.next) p.next = at + 1n;
    return () => {
      if (this.partitions.get(key(topic, partition)) !== p) return;
      const e = p.open.get(at);
      if (!e) return;
      e.handling = false;
      if (e.holds === 0) p.open.delete(at);
    };
  }

  /** One more thing keeps the event open; the function given back releases it (once). */
  hold(topic: string, partition: number, offset: string): () => void {
    const p = this.partitions.get(key(topic, partition));
    // A partition revoked meanwhile is the next owner's: nothing here keeps it.
    if (!p) return () => undefined;
    const at = BigInt(offset);
    const entry = p.open.get(at) ?? { handling: false, holds: 0 };
    entry.holds++;
    p.open.set(at, entry);
    p.holds++;
    this.held++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (this.partitions.get(key(topic, partition)) !== p) return;
      p.holds--;
      this.held--;
      const e = p.open.get(at);
      if (!e) return;
      e.holds--;
      if (e.holds === 0 && !e.handling) p.open.delete(at);
    };
  }

  get heldCount(): number {
    return this.held;
  }

  /** Forgets the partitions this member lost (their open events are the next owner's). */
  keepOnly(assignment: ReadonlyMap<string, readonly number[]>): { topic: string; partitions: number[] }[] {
    const revoked = new Map<string, number[]>();
    for (const [k, p] of this.partitions) {
      if (assignment.get(p.topic)?.includes(p.partition)) continue;
      this.held -= p.holds;
      this.partitions.delete(k);
      revoked.set(p.topic, [...(revoked.get(p.topic) ?? []), p.partition]);
    }
    return [...revoked].map(([topic, partitions]) => ({ topic, partitions }));
  }

  /** For each partition, the offset to commit: its oldest open event's, else the one after its last delivered. */
  committable(): { topic: string; partition: number; offset: string }[] {
    return [...this.partitions.values()].map((p) => {
      let oldest = p.next;
      for (const at of p.open.keys()) if (at < oldest) oldest = at;
      return { topic: p.topic, partition: p.partition, offset: oldest.toString() };
    });
  }

  private partitionOf(topic: string, partition: number): Partition {
    const k = key(topic, partition);
    let p = this.partitions.get(k);
    if (!p) {
      p = { open: new Map(), holds: 0, next: 0n, topic, partition };
      this.partitions.set(k, p);
    }
    return p;
  }
}

interface Partition {
  topic: string;
  partition: number;
  /** Each open offset: whether a delivery of it is being handled, and its holds not yet released. */
  open: Map<bigint, { handling: boolean; holds: number }>;
  holds: number;
  next: bigint;
}

const key = (topic: string, partition: number) => `${topic}:${partition}`;
