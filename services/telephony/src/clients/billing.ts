import { contextOf, isReason, type PromiseClient } from '@voiceapi/kit';
import { voiceapi } from '@voiceapi/proto';
import type { Wallet } from '../usecases/ports';

const { CallDirection, TransactionType } = voiceapi.billing.v1;
type BillingClient = Pick<PromiseClient<typeof voiceapi.billing.v1.BillingServiceService>, 'quoteCallHold' | 'placeHold' | 'debit'>;

/** The wallet telephony needs, over billing's gRPC API: billing owns the arithmetic and the refusals. */
export function billingWallet(billing: BillingClient): Wallet {
  return {
    async placeHold(scope, callId, direction, maxCallSeconds, expiresAt) {
      const dir = direction === 'outbound' ? CallDirection.CALL_DIRECTION_OUTBOUND : CallDirection.CALL_DIRECTION_INBOUND;
      // The hold is billing's quote for the call's longest possible cost.
      const quote = await billing.quoteCallHold({ direction: dir, maxCallSeconds }, contextOf(scope));
      if (quote.amount <= 0) return 'placed';
      try {
        await billing.placeHold({ callId, amount: quote.amount, direction: dir, expireTime: expiresAt }, contextOf(scope));
        return 'placed';
      } catch (err) {
        if (isReason(err, 'insufficient_credits')) return 'insufficient';
        throw err;
      }
    },
    async debitNumber(scope, reference, amount, description) {
      try {
        const r = await billing.debit({ reference, amount, type: TransactionType.TRANSACTION_TYPE_NUMBER_PURCHASE, description }, contextOf(scope));
        return { creditsCharged: -(r.transaction?.amount ?? -amount), balanceAfter: r.transaction?.balanceAfter ?? r.balance?.balance ?? 0 };
      } catch (err) {
        if (isReason(err, 'insufficient_credits')) return 'insufficient';
        throw err;
      }
    },
  };
}
