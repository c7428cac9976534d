import { scopeOfRecord, type TenantScope } from '@voiceapi/kit/grpc';
import { type Logger } from '@voiceapi/kit/service';
import { openHoldCount, type Hold, type WalletState } from '../domain/wallet';
import type { CallStore } from '../store/call-store';
import type { Head, WalletStore } from '../store/wallet-store';
import type { CallCharging } from '../usecases/calls';
import type { Wallets } from '../usecases/wallets';

/** Re-read before the last pass, so a hold appended just after a pass read past its expiry is still seen. */
const REREAD_MS = 60_000;
/** A wallet with no hold open moves its cursor on at most this often. */
const QUIET_CURSOR_MS = 10 * 60_000;

/** Settles what no event settled: failed charges, expired holds, and entries a crash left unannounced. */
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
        // The list and the range may both name a hold.
        const expiredNow = new Set<string>();
        for await (const expired of this.expiredHolds(scope, head, hint, now))
          for (const hold of expired) {
            if (expiredNow.has(hold.callId)) continue;
            expiredNow.add(hold.callId);
            const o = await charging.expire(scope, hold.callId, hold.direction, now);
            log.warn({ callId: hold.callId, status: o.status }, 'settled a hold whose call never reported its end');
          }
        const sweptTo = new Date(now.getTime() - REREAD_MS);
        // A wallet at rest writes nothing.
        const recent = (hint.holdsSweptTo?.getTime() ?? 0) > sweptTo.getTime() - QUIET_CURSOR_MS;
        if (!head.holds && (openHoldCount(head) > 0 || !recent)) await store.noteHoldsSwept(scope, sweptTo);
        if (hint.announcedSeq < head.seq) await this.deps.announce(scope, hint.announcedSeq, head.seq);
      } catch (err) {
        log.warn({ err, tenantId: hint.tenantId }, 'could not sweep a wallet yet');
      }
    }
  }

  /** Open holds past expiry, paged: from the head's list (1.2, `compat`), else from the chain (decision 0137). */
  private async *expiredHolds(scope: TenantScope, head: WalletState, hint: Head, now: Date): AsyncGenerator<Hold[]> {
    const expired = (h: Hold) => new Date(h.expiresAt).getTime() <= now.getTime();
    if (head.holds) {
      yield head.holds.filter(expired);
      return;
    }
    if (openHoldCount(head) === 0) return;
    const { store, wallets } = this.deps;
    // A call may hold again after a release: its open hold may be later than the expired one read.
    const openOf = async (holds: Hold[]) => {
      const ops = holds.map((h) => ({ kind: 'release' as const, callId: h.callId }));
      return [...(await wallets.openHolds(scope, head, ops)).values()].filter(expired);
    };
    // Holds up to the chain's last list are in that list; the range reads those placed after it.
    const listed = head.listedUpTo;
    if (listed !== undefined) yield await openOf((await wallets.baseHolds(scope, listed)).filter(expired));
    const after = new Date(Math.min(hint.holdsSweptTo?.getTime() ?? 0, now.getTime() - REREAD_MS));
    for await (const page of store.holdsExpiring(scope, after, now, listed)) yield await openOf(page);
  }
}
