import { isTransient } from '@voiceapi/kit/errors';
import { type TenantScope } from '@voiceapi/kit/grpc';
import { LRUCache } from 'lru-cache';
import type { CreditCheck, CreditState, HoldQuote } from './ports';

/** A forgotten tenant is quoted again. */
const MAX_KNOWN = 100_000;

/**
 * A view of each tenant's credit kept from billing's CreditsAvailable, so ingest goes on while billing restarts.
 * Covered: accepted at once (telephony's hold stays the authority). Otherwise billing is asked (a top-up may be
 * in flight); if it is away, the view's refusal stands (402), or with no view the failure does (503).
 */
export class CreditView implements CreditCheck {
  /** Read with `peek`: only a newer wallet state counts as seeing a tenant. */
  private readonly known = new LRUCache<string, CreditState>({ max: MAX_KNOWN });

  constructor(private readonly quote: HoldQuote) {}

  /** Kept when newer than the one known. */
  seen(tenantId: string, state: CreditState): void {
    const known = this.known.peek(tenantId);
    if (known && known.seq >= state.seq) return;
    this.known.set(tenantId, state);
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
