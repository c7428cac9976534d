/**
 * Writes that arrive while one is under way are done together next: one store round trip for
 * many callers instead of one each. The first waits for the end of the event loop's turn, so
 * the writes asked in the same turn (the handlers of one batch of messages, say) are done
 * together too. `write` gets every waiting item and answers one result per item, in order; if it
 * throws, every caller of that round gets the error.
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
