/**
 * Writes that arrive during a write, or in the same event-loop turn, share the next round trip.
 * `write` answers one result per item, in order; if it throws, the whole round gets the error.
 */
export class Coalescer<I, O> {
  private queued: { item: I; resolve: (o: O) => void; reject: (e: unknown) => void }[] = [];
  private flushing: Promise<void> | undefined;

  constructor(private readonly write: (items: I[]) => Promise<O[]>) {}

  run(item: I): Promise<O> {
    return new Promise((resolve, reject) => {
      this.queued.push({ item, resolve, reject });
      this.flushing ??= this.flush();
    });
  }

  private async flush(): Promise<void> {
    await new Promise<void>((resolve) => setImmediate(resolve));
    while (this.queued.length > 0) {
      const round = this.queued.splice(0);
      try {
        const out = await this.write(round.map((q) => q.item));
        round.forEach((q, i) => q.resolve(out[i]!));
      } catch (err) {
        for (const q of round) q.reject(err);
      }
    }
    this.flushing = undefined;
  }
}
