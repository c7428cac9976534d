import { randomUUID } from 'node:crypto';
import { voiceapi } from '@voiceapi/proto';
import type { z } from '../../http/zod';
import type { Balance, TopUp, Transaction, TransactionsQuery, TransactionType } from './schemas';

/** The billing service's messages ↔ the JSON of schemas.ts. */

type TypeName = z.infer<typeof TransactionType>;
type ProtoType = voiceapi.billing.v1.TransactionType;
const ProtoType = voiceapi.billing.v1.TransactionType;

/** Each transaction type's JSON name and proto value (every name must be here: the Record says so). */
const PROTO_TYPE: Record<TypeName, ProtoType> = {
  top_up: ProtoType.TRANSACTION_TYPE_TOP_UP,
  call_deduction: ProtoType.TRANSACTION_TYPE_CALL_DEDUCTION,
  number_purchase: ProtoType.TRANSACTION_TYPE_NUMBER_PURCHASE,
  knowledge_upload: ProtoType.TRANSACTION_TYPE_KNOWLEDGE_UPLOAD,
  adjustment: ProtoType.TRANSACTION_TYPE_ADJUSTMENT,
};
const TYPE_NAME = new Map(Object.entries(PROTO_TYPE).map(([name, value]) => [value, name as TypeName]));

/** A ledger row → JSON. A row of a type the API does not name is a contract break: a 500, not a guess. */
export function transactionJson(t: voiceapi.billing.v1.Transaction | undefined): z.infer<typeof Transaction> {
  if (!t) throw new Error('billing service answered without a transaction');
  const type = TYPE_NAME.get(t.type);
  if (!type) throw new Error(`billing service answered a transaction of unknown type ${t.type}`);
  return {
    id: t.id,
    type,
    amount: t.amount,
    balanceAfter: t.balanceAfter,
    // Only call rows name a call; an empty string is no id either.
    callId: t.callId || null,
    reference: t.reference,
    description: t.description,
    createdAt: (t.createTime ?? new Date(0)).toISOString(),
  };
}

export function balanceJson(b: voiceapi.billing.v1.Balance | undefined): z.infer<typeof Balance> {
  if (!b) throw new Error('billing service answered without a balance');
  return { balance: b.balance, available: b.available, held: b.held, updatedAt: b.updateTime?.toISOString() ?? null };
}

export function listTransactionsRequest(
  query: z.infer<typeof TransactionsQuery>,
): voiceapi.billing.v1.ListTransactionsRequest {
  return {
    page: { page: query.page, limit: query.limit },
    type: query.type === undefined ? ProtoType.TRANSACTION_TYPE_UNSPECIFIED : PROTO_TYPE[query.type],
  };
}

/**
 * An operator top-up. Each request is a new top-up: the reference is fresh every time (billing
 * would answer a repeated reference with the original row).
 */
/** The ledger reference of a top-up: from the operator's Idempotency-Key (a retry replays), else new. */
export function topUpRequest(body: z.infer<typeof TopUp>, idempotencyKey?: string): voiceapi.billing.v1.TopUpRequest {
  const reference = idempotencyKey === undefined ? `top_up:${randomUUID()}` : `top_up:key:${idempotencyKey}`;
  return { amount: body.amount, reference, ...(body.note !== undefined && { note: body.note }) };
}
