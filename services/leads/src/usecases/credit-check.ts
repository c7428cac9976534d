import type { TenantScope } from '@voiceapi/kit';
import type { CreditCheck, HoldQuote } from './ports';

/** How much more than one hold a wallet must have for its answer to be remembered. */
const AMPLE = 100;
const REMEMBER_MS = 1_000;
const MAX_REMEMBERED = 10_000;

/**
 * Whether a live wallet can cover one call's hold, from billing. The check refuses early (402);
 * the guarantee is the hold telephony places before it dials. So a wallet with at least a hundred
 * holds' worth of credit is taken at its word for a second: a burst of leads costs billing one
 * quote a second instead of one each, and a wallet near empty is asked every time.
 */
export class QuotedCreditCheck implements CreditCheck {
  private readonly ample = new Map<string, number>();

  constructor(
    private readonly quote: HoldQuote,
    private readonly now: () => number = Date.now,
  ) {}

  async coversOneCall(scope: TenantScope, maxCallSeconds: number): Promise<boolean> {
    const key = `${scope.tenantId}:${maxCallSeconds}`;
    const until = this.ample.get(key);
    if (until !== undefined && until > this.now()) return true;
    const q = await this.quote(scope, maxCallSeconds);
    if (q.available >= AMPLE * q.amount) {
      if (this.ample.size >= MAX_REMEMBERED) this.ample.delete(this.ample.keys().next().value!);
      this.ample.set(key, this.now() + REMEMBER_MS);
    } else this.ample.delete(key);
    return q.covered;
  }
}
