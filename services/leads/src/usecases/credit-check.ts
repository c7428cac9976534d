import { isTransient, type TenantScope } from '@voiceapi/kit';
import { LRUCache } from 'lru-cache';
import type { CreditCheck, CreditState, HoldQuote } from './ports';

/** Tenants whose credit a replica remembers (the least recently seen are forgotten: a quote finds them again). */
const MAX_KNOWN = 100_000;

/**
 * Whether a live wallet can cover one call's hold, from a view of each tenant's credit that billing's
 * announcements keep (`seen`, CreditsAvailable after every change of a wallet: a top-up, a hold,
 * a charge, a release), so lead ingest does not ask billing and goes on while billing restarts.
 * The view is never older than the newest change this replica has heard of (a higher `seq` wins).
 *
 * - The view covers the call: accepted at once. If the wallet was spent meanwhile, the hold
 *   telephony places before it dials refuses, and the lead fails with `insufficient_credits`
 *   without being dialled: the hold stays the authority.
 * - The view does not cover it, or knows nothing of the tenant (a replica just started): billing is
 *   asked (a top-up may not have reached the view yet), without waiting for it to be up.
 * - Billing away: the view's refusal stands (402); with no view, the failure is the answer (503).
 */
export class CreditView implements CreditCheck {
  /** Read with `peek`: what counts as seeing a tenant is a newer state of its wallet (`set`), not a quote asked of it. */
  private readonly known = new LRUCache<string, CreditState>({ max: MAX_KNOWN });

  constructor(private readonly quote: HoldQuote) {}

  /** A wallet's credit, as billing announced or answered it: kept when newer than the one known. */
  seen(tenantId: string, state: CreditState): void {
    const known = this.known.peek(tenantId);
    if (known && known.seq >= state.seq) return;
    this.known.set(tenantId, state); // the most recently seen now; past MAX_KNOWN, the least recently seen is forgotten
  }

  async coversOneCall(scope: TenantScope, maxCallSeconds: number): Promise<boolean> {
    const known = this.known.peek(scope.tenantId);
    if (known && known.longestOutboundCallSeconds >= maxCallSeconds) return true;
    try {
      const q = await this.quote(scope, maxCallSeconds);
      this.seen(scope.tenantId, q.state);
      return q.covered;
    } catch (err) {
      if (known && isTransient(err)) return false;
      throw err;
    }
  }
}
