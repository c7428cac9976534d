import type { Lease, Logger } from '@voiceapi/kit';
import type { CallStore } from '../store/call-store';
import type { WalletStore } from '../store/wallet-store';
import type { CallCharging } from './calls';
import type { Wallets } from './wallets';

/**
 * Settles what no event settled, on one replica at a time (a lease):
 *  - ended calls whose charge failed (remembered by the consumer), after `settleAfterMs`;
 *  - holds past their expiry: a call that never reported its end is settled without a charge;
 *  - chain entries whose events were not announced (a crash between append and announcement).
 */
export class Sweeper {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private passes = 0;

  constructor(
    private readonly deps: {
      lease: Lease;
      calls: CallStore;
      charging: CallCharging;
      store: WalletStore;
      wallets: Wallets;
      announce: (tenantId: string, from: number, to: number) => Promise<void>;
      log: Logger;
      intervalMs: number;
      settleAfterMs: number;
    },
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.tick(), this.deps.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
    await this.deps.lease.release().catch(() => undefined);
  }

  /** One pass, if this replica holds the lease; concurrent calls share it. */
  tick(): Promise<void> {
    this.running ??= (async () => {
      try {
        if (await this.deps.lease.acquire()) await this.sweep(new Date());
      } catch (err) {
        this.deps.log.warn({ err }, 'billing sweep failed; next interval retries');
      } finally {
        this.running = undefined;
      }
    })();
    return this.running;
  }

  private async sweep(now: Date): Promise<void> {
    const { calls, charging, store, wallets, log } = this.deps;
    // Each item on its own: one that keeps failing must not stop the others.
    for (const call of await calls.unsettledSince(new Date(now.getTime() - this.deps.settleAfterMs))) {
      try {
        const o = await charging.settle(call);
        await calls.forget(call.callId);
        log.info({ callId: call.callId, status: o.status }, 'settled an ended call whose charge had failed');
      } catch (err) {
        log.warn({ err, callId: call.callId }, 'could not settle an ended call yet');
      }
    }
    // Hints may lag or be overwritten by another replica: every tenth pass reads every head.
    const everyHead = ++this.passes % 10 === 0;
    for (const hint of await store.headHints()) {
      try {
        if (!everyHead && hint.holds === 0 && hint.announcedSeq >= hint.seq && !(await store.entryAt(hint.tenantId, hint.seq + 1))) continue;
        const head = await wallets.read(hint.tenantId);
        for (const hold of head.holds) {
          if (new Date(hold.expiresAt).getTime() > now.getTime()) continue;
          const o = await charging.expire(hint.tenantId, hold.callId, hold.direction, now);
          log.warn({ callId: hold.callId, status: o.status }, 'settled a hold whose call never reported its end');
        }
        if (hint.announcedSeq < head.seq) await this.deps.announce(hint.tenantId, hint.announcedSeq, head.seq);
      } catch (err) {
        log.warn({ err, tenantId: hint.tenantId }, 'could not sweep a wallet yet');
      }
    }
  }
}
