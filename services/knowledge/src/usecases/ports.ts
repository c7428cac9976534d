import type { TenantScope } from '@voiceapi/kit';

/** Billing, as uploads need it. */
export interface Wallet {
  /** Credits per started 1,000 words (the rate card's). */
  knowledgeRate(scope: TenantScope): Promise<number>;
  /** Debits once per reference; a repeat answers the first debit. */
  debit(scope: TenantScope, reference: string, amount: number, description: string): Promise<{ balanceAfter: number } | 'insufficient'>;
  balance(scope: TenantScope): Promise<number>;
}

/**
 * What knowledge announces (the `knowledge.v1` stream, through the outbox): an event is stored held
 * before the write it announces and released after it.
 */
export interface DocumentEvents {
  documentDeleted(scope: TenantScope, fileId: string, at: Date): Promise<string[]>;
  release(ids: readonly string[]): Promise<void>;
}
