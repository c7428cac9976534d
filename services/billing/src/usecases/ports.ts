import type { TenantScope } from '@voiceapi/kit';
import type { CallOutcome } from '../domain/call';
import type { Entry, WalletState } from '../domain/wallet';

/**
 * What billing announces, through the outbox (`events/publish.ts`): each event's id comes from
 * what it announces, so announcing the same thing again stores and publishes nothing new.
 */
export interface BillingEvents {
  /**
   * CreditsUsage for each debit entry appended, and CreditsAvailable after the last when the calls
   * the credit covers changed since `before` (the wallet before the entries; unknown: announced).
   */
  ledgerEntries(scope: TenantScope, entries: readonly Entry[], before?: WalletState): Promise<void>;
  /** Announces entries the live path did not (the sweeper), then moves the cursor past them. */
  catchUp(scope: TenantScope, from: number, to: number): Promise<void>;
  /** The outcome of a call whose end never came (its hold expired): no end announces it. */
  outcome(o: CallOutcome): Promise<void>;
}

/** Announces an outcome (the CallBilled event); must be idempotent by call id. */
export type OutcomeAnnouncer = BillingEvents['outcome'];
