import { isReason } from '@voiceapi/kit/errors';
import { contextOf, type PromiseClient, type TenantScope } from '@voiceapi/kit/grpc';
import { Coalescer } from '@voiceapi/kit/work';
import { voiceapi } from '@voiceapi/proto';
import type { Call, CallCharge } from '../domain/call';
import type { Wallet } from '../usecases/ports';

const { CallDirection, TransactionType } = voiceapi.billing.v1;
type BillingClient = Pick<
  PromiseClient<typeof voiceapi.billing.v1.BillingServiceService>,
  'placeCallHolds' | 'debit' | 'settleCalls'
>;

/** Calls settled, or held, in one request at most (billing's limit). */
const BATCH = 500;

/** The wallet telephony needs, over billing's gRPC API: billing owns the arithmetic and the refusals. */
export function billingWallet(billing: BillingClient): Wallet {
  // Calls ending during a settlement are settled together next: one request per tenant (one wallet append).
  const settlements = inBatches<voiceapi.billing.v1.EndedCall, voiceapi.billing.v1.CallSettlement>(
    async (scope, asked) => (await billing.settleCalls({ calls: asked }, contextOf(scope))).settlements,
    'settlement',
  );
  // The holds of a dispatcher's pass (asked together) are placed in one request per tenant; billing prices them.
  const holds = inBatches<voiceapi.billing.v1.CallHoldRequest, voiceapi.billing.v1.CallHoldResult>(
    async (scope, asked) => (await billing.placeCallHolds({ holds: asked }, contextOf(scope))).holds,
    'call hold',
  );
  return {
    async settle(scope, call) {
      const r = await settlements.run({ scope, call: endedCall(call) });
      if ('failed' in r) throw r.failed;
      return charge(r);
    },
    async placeHold(scope, callId, direction, maxCallSeconds, expiresAt) {
      const r = await holds.run({
        scope,
        call: {
          callId,
          direction:
            direction === 'outbound' ? CallDirection.CALL_DIRECTION_OUTBOUND : CallDirection.CALL_DIRECTION_INBOUND,
          maxCallSeconds,
          expireTime: expiresAt,
        },
      });
      if ('failed' in r) throw r.failed;
      return r.placed ? 'placed' : 'insufficient';
    },
    async debitNumber(scope, reference, amount, description) {
      try {
        const r = await billing.debit(
          { reference, amount, type: TransactionType.TRANSACTION_TYPE_NUMBER_PURCHASE, description },
          contextOf(scope),
        );
        return {
          creditsCharged: -(r.transaction?.amount ?? -amount),
          balanceAfter: r.transaction?.balanceAfter ?? r.balance?.balance ?? 0,
        };
      } catch (err) {
        if (isReason(err, 'insufficient_credits')) return 'insufficient';
        throw err;
      }
    },
  };
}

function endedCall(call: Call): voiceapi.billing.v1.EndedCall {
  return {
    callId: call.id,
    direction:
      call.direction === 'outbound' ? CallDirection.CALL_DIRECTION_OUTBOUND : CallDirection.CALL_DIRECTION_INBOUND,
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
  if (status !== 'charged' && status !== 'failed' && status !== 'skipped')
    throw new Error(`billing settled call ${s.callId} as ${JSON.stringify(status)}`);
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

/** Per-call requests asked while one is under way go together next: one per tenant and key mode, ≤ BATCH calls. */
function inBatches<Q extends { callId: string }, A extends { callId: string }>(
  send: (scope: TenantScope, asked: Q[]) => Promise<A[]>,
  what: string,
) {
  return new Coalescer<{ scope: TenantScope; call: Q }, A | { failed: unknown }>(async (asked) => {
    const byScope = new Map<string, number[]>();
    asked.forEach(({ scope }, i) => {
      const key = `${scope.mode}:${scope.tenantId}`;
      (byScope.get(key) ?? byScope.set(key, []).get(key)!).push(i);
    });
    const out: (A | { failed: unknown })[] = asked.map(() => ({ failed: new Error(`no ${what} asked`) }));
    const requests = [...byScope.values()].flatMap((all) =>
      Array.from({ length: Math.ceil(all.length / BATCH) }, (_, n) => all.slice(n * BATCH, (n + 1) * BATCH)),
    );
    await Promise.all(
      requests.map(async (indices) => {
        try {
          const answers = await send(
            asked[indices[0]!]!.scope,
            indices.map((i) => asked[i]!.call),
          );
          indices.forEach((i, n) => {
            const a = answers[n];
            out[i] =
              a?.callId === asked[i]!.call.callId
                ? a
                : { failed: new Error(`billing answered no ${what} for call ${asked[i]!.call.callId}`) };
          });
        } catch (err) {
          for (const i of indices) out[i] = { failed: err };
        }
      }),
    );
    return out;
  });
}
