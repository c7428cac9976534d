import type { ReadBack } from '@voiceapi/kit/events';
import type { TenantScope } from '@voiceapi/kit/grpc';

/** Billing, as uploads need it. */
export interface Wallet {
  /** Credits per started 1,000 words (the rate card's). */
  knowledgeRate(scope: TenantScope): Promise<number>;
  /** Debits once per reference; a repeat answers the first debit. */
  debit(
    scope: TenantScope,
    reference: string,
    amount: number,
    description: string,
  ): Promise<{ balanceAfter: number } | 'insufficient'>;
  balance(scope: TenantScope): Promise<number>;
}

/** What knowledge announces (the `knowledge.v1` stream): agents drop a deleted document. */
export interface DocumentEvents {
  /** Runs `erase` and announces it (DocumentDeleted) only if it happened; `readBack` (from the store) tells, should it fail part-way. */
  documentDeleted<R>(
    scope: TenantScope,
    fileId: string,
    at: Date,
    erase: () => Promise<R>,
    readBack: ReadBack,
  ): Promise<R>;
}
