import { scopeOfRecord, type Logger, type TenantScope } from '@voiceapi/kit';
import type { CallStore } from '../store/call-store';
import type { WalletStore } from '../store/wallet-store';
import type { CallCharging } from '../usecases/calls';
import type { Wallets } from '../usecases/wallets';

/**
 * Settles what no event settled (its passes run by a worker on one replica at a time):
 *  - ended calls whose charge failed (remembered by the consumer), after `settleAfterMs`;
 *  - holds past their expiry: a call that never reported its end is settled without a charge;
 *  - chain entries whose events were not announced (a crash between append and announcement).
 */
export class Sweeper {
  private passes = 0;

  constructor(
    private readonly deps: {
      calls: CallStore;
      charging: CallCharging;
      store: WalletStore;
      wallets: Wallets;
      announce: (scope: TenantScope, from: number, to: number) => Promise<void>;
      log: Logger;
      settleAfterMs: number;
    },
  ) {}

  /** One pass (run by a worker on one replica at a time). */
  async sweep(now = new Date()): Promise<void> {
    const { calls, charging, store, wallets, log } = this.deps;
    // Each item on its own: one that keeps failing must not stop the others.
    for (const call of await calls.unsettledSince(new Date(now.getTime() - this.deps.settleAfterMs))) {
      try {
        const o = await charging.settle(call);
        await calls.forget(scopeOfRecord(call.tenantId), call.callId);
        log.info({ callId: call.callId, status: o.status }, 'settled an ended call whose charge had failed');
      } catch (err) {
        log.warn({ err, callId: call.callId }, 'could not settle an ended call yet');
      }
    }
    // Hints may lag or be overwritten by another replica: every tenth pass reads every head.
    const everyHead = ++this.passes % 10 === 0;
    for (const hint of await store.headHints()) {
      try {
        const scope = scopeOfRecord(hint.tenantId);
        if (
          !everyHead &&
          hint.holds === 0 &&
          hint.announcedSeq >= hint.seq &&
          !(await store.entryAt(scope, hint.seq + 1))
        )
          continue;
        const head = await wallets.read(scope);
        for (const hold of head.holds) {
          if (new Date(hold.expiresAt).getTime() > now.getTime()) continue;
          const o = await charging.expire(scope, hold.callId, hold.direction, now);
          log.warn({ callId: hold.callId, status: o.status }, 'settled a hold whose call never reported its end');
        }
        if (hint.announcedSeq < head.seq) await this.deps.announce(scope, hint.announcedSeq, head.seq);
      } catch (err) {
        log.warn({ err, tenantId: hint.tenantId }, 'could not sweep a wallet yet');
      }
    }
  }
}
