import { isReason } from '@voiceapi/kit/errors';
import { contextOf, type PromiseClient } from '@voiceapi/kit/grpc';
import { voiceapi } from '@voiceapi/proto';
import type { Wallet } from '../usecases/ports';

const { TransactionType } = voiceapi.billing.v1;
type BillingClient = Pick<
  PromiseClient<typeof voiceapi.billing.v1.BillingServiceService>,
  'getRateCard' | 'debit' | 'getBalance'
>;

/** The wallet uploads are charged to, over billing's gRPC API (the rate is billing's rate card). */
export function billingWallet(billing: BillingClient): Wallet {
  return {
    async knowledgeRate(scope) {
      return (await billing.getRateCard({}, contextOf(scope))).rateCard?.knowledgePerThousandWords ?? 1;
    },
    async debit(scope, reference, amount, description) {
      try {
        const r = await billing.debit(
          { reference, amount, type: TransactionType.TRANSACTION_TYPE_KNOWLEDGE_UPLOAD, description },
          contextOf(scope),
        );
        return { balanceAfter: r.transaction?.balanceAfter ?? r.balance?.balance ?? 0 };
      } catch (err) {
        if (isReason(err, 'insufficient_credits')) return 'insufficient';
        throw err;
      }
    },
    async balance(scope) {
      return (await billing.getBalance({}, contextOf(scope))).balance?.balance ?? 0;
    },
  };
}
