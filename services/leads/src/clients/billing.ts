import { contextOf, type PromiseClient } from '@voiceapi/kit/grpc';
import { voiceapi } from '@voiceapi/proto';
import type { HoldQuote } from '../usecases/ports';

type BillingClient = Pick<PromiseClient<typeof voiceapi.billing.v1.BillingServiceService>, 'quoteCallHold'>;

/** How long a quote may take: lead ingest has a view of the credit to fall back on. */
const QUOTE_TIMEOUT_MS = 1_000;

/**
 * Billing's quote for one outbound call's hold, asked as the caller (its key mode decides which
 * wallet). It fails at once while billing is away instead of waiting for it (the caller decides
 * from its view of the credit).
 */
export function billingHoldQuote(billing: BillingClient): HoldQuote {
  return async (scope, maxCallSeconds) => {
    const q = await billing.quoteCallHold(
      { direction: voiceapi.billing.v1.CallDirection.CALL_DIRECTION_OUTBOUND, maxCallSeconds },
      contextOf(scope),
      { timeoutMs: QUOTE_TIMEOUT_MS, waitForReady: false },
    );
    return {
      covered: q.covered,
      state: { seq: q.balance?.seq ?? 0, longestOutboundCallSeconds: q.longestCoveredSeconds },
    };
  };
}
