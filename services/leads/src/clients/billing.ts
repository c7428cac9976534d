import { contextOf, type PromiseClient } from '@voiceapi/kit';
import { voiceapi } from '@voiceapi/proto';
import type { HoldQuote } from '../usecases/ports';

type BillingClient = Pick<PromiseClient<typeof voiceapi.billing.v1.BillingServiceService>, 'quoteCallHold'>;

/** Billing's quote for one outbound call's hold, asked as the caller (its key mode decides which wallet). */
export function billingHoldQuote(billing: BillingClient): HoldQuote {
  return async (scope, maxCallSeconds) => {
    const q = await billing.quoteCallHold({ direction: voiceapi.billing.v1.CallDirection.CALL_DIRECTION_OUTBOUND, maxCallSeconds }, contextOf(scope));
    return { amount: q.amount, available: q.balance?.available ?? 0, covered: q.covered };
  };
}
