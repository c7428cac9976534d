import type { Lease, Logger } from '@voiceapi/kit';
import type { Dialing } from './dialing';

/**
 * Dispatches due scheduled dials and follow-ups on one replica at a time (a lease). A full batch
 * is followed by another at once, so a window opening for many contacts drains quickly.
 */
export class Scheduler {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(private readonly d: { lease: Lease; dialing: Dialing; log: Logger; intervalMs: number; batch?: number }) {}

  start(): void {
    this.timer = setInterval(() => void this.tick(), this.d.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
    await this.d.lease.release().catch(() => undefined);
  }

  /** One pass, if this replica holds the lease; concurrent calls share it. */
  tick(): Promise<void> {
    this.running ??= (async () => {
      try {
        const batch = this.d.batch ?? 200;
        if (!(await this.d.lease.acquire())) return;
        while ((await this.d.dialing.dispatchDue(batch)) === batch && this.d.lease.held);
      } catch (err) {
        this.d.log.warn({ err }, 'scheduler pass failed; next interval retries');
      } finally {
        this.running = undefined;
      }
    })();
    return this.running;
  }
}
