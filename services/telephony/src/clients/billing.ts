import { Coalescer, contextOf, isReason, type PromiseClient, type TenantScope } from '@voiceapi/kit';
import { voiceapi } from '@voiceapi/proto';
import type { Call, CallCharge } from '../domain/call';
import type { Wallet } from '../usecases/ports';

const { CallDirection, TransactionType } = voiceapi.billing.v1;
type BillingClient = Pick<PromiseClient<typeof voiceapi.billing.v1.BillingServiceService>, 'quoteCallHold' | 'placeHold' | 'debit' | 'settleCalls'>;

/** Calls settled in one request at most (billing's limit). */
const SETTLE_BATCH = 500;

/** The wallet telephony needs, over billing's gRPC API: billing owns the arithmetic and the refusals. */
export function billingWallet(billing: BillingClient): Wallet {
  // Calls that end while a settlement is under way are settled together next: one request per
  // tenant (its wallet plans them in one append), whatever the number of calls.
  const settlements = new Coalescer<{ scope: TenantScope; call: Call }, CallCharge | { failed: unknown }>(async (asked) => {
    const byScope = new Map<string, number[]>();
    asked.forEach(({ scope }, i) => {
      const key = `${scope.mode}:${scope.tenantId}`;
      (byScope.get(key) ?? byScope.set(key, []).get(key)!).push(i);
    });
    const out: (CallCharge | { failed: unknown })[] = asked.map(() => ({ failed: new Error('not settled') }));
    const requests = [...byScope.values()].flatMap((all) => Array.from({ length: Math.ceil(all.length / SETTLE_BATCH) }, (_, n) => all.slice(n * SETTLE_BATCH, (n + 1) * SETTLE_BATCH)));
    await Promise.all(
      requests.map(async (indices) => {
        try {
          const res = await billing.settleCalls({ calls: indices.map((i) => endedCall(asked[i]!.call)) }, contextOf(asked[indices[0]!]!.scope));
          indices.forEach((i, n) => {
            const st = res.settlements[n];
            out[i] = st?.callId === asked[i]!.call.id ? charge(st) : { failed: new Error(`billing answered no settlement for call ${asked[i]!.call.id}`) };
          });
        } catch (err) {
          for (const i of indices) out[i] = { failed: err };
        }
      }),
    );
    return out;
  });
  return {
    async settle(scope, call) {
      const r = await settlements.run({ scope, call });
      if ('failed' in r) throw r.failed;
      return r;
    },
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

/** What billing is told of an ended call. */
function endedCall(call: Call): voiceapi.billing.v1.EndedCall {
  return {
    callId: call.id,
    direction: call.direction === 'outbound' ? CallDirection.CALL_DIRECTION_OUTBOUND : CallDirection.CALL_DIRECTION_INBOUND,
    durationSeconds: call.durationSeconds,
    holdFailed: call.holdFailed,
    endTime: call.endedAt ?? new Date(),
    ...(call.contactId && { contactId: call.contactId }),
    ...(call.campaignId && { campaignId: call.campaignId }),
    ...(call.agentId && { agentId: call.agentId }),
    // Billing names the number an outbound call was placed from (an inbound caller's is theirs).
    ...(call.direction === 'outbound' && call.fromNumber && { fromNumber: call.fromNumber }),
  };
}

function charge(s: voiceapi.billing.v1.CallSettlement): CallCharge {
  const status = s.billingStatus;
  if (status !== 'charged' && status !== 'failed' && status !== 'skipped') throw new Error(`billing settled call ${s.callId} as ${JSON.stringify(status)}`);
  return {
    billingStatus: status,
    creditsCharged: s.creditsCharged,
    ...(s.creditsError !== undefined && { creditsError: s.creditsError }),
    ...(s.transactionId !== undefined && { transactionId: s.transactionId }),
    ...(s.ledgerSeq !== undefined && { ledgerSeq: s.ledgerSeq }),
    ...(s.balanceAfter !== undefined && { balanceAfter: s.balanceAfter }),
    billedAt: s.billTime ?? new Date(),
  };
}
