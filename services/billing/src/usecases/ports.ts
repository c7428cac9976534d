import type { TenantScope } from '@voiceapi/kit/grpc';
import type { CallOutcome } from '../domain/call';
import type { Entry, WalletState } from '../domain/wallet';

/** Announced through the outbox (`events/publish.ts`) under ids derived from the content, so repeats are no-ops. */
export interface BillingEvents {
  /** CreditsUsage per debit, and CreditsAvailable when the calls covered changed since `before` (unknown: always). */
  ledgerEntries(scope: TenantScope, entries: readonly Entry[], before?: WalletState): Promise<void>;
  /** Announces entries the live path did not (the sweeper), then moves the cursor past them. */
  catchUp(scope: TenantScope, from: number, to: number): Promise<void>;
  /** The outcome of a call whose end never came (its hold expired): no end announces it. */
  outcome(o: CallOutcome): Promise<void>;
}

/** Announces an outcome (the CallBilled event); must be idempotent by call id. */
export type OutcomeAnnouncer = BillingEvents['outcome'];
