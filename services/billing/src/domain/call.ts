import type { Direction } from './wallet';

/** What billing needs to know of an ended call (from telephony's CallEnded). */
export interface EndedCall {
  callId: string;
  tenantId: string;
  direction: Direction;
  durationSeconds: number;
  sandbox: boolean;
  free: boolean;
  holdFailed: boolean;
  endedAt: Date;
  contactId?: string;
  campaignId?: string;
  agentId?: string;
  /** Outbound only: the number it was placed from (an inbound caller's number is not kept here). */
  fromNumber?: string;
  /** Not an end at all: the call's hold expired without one (settled by the sweeper). */
  expired?: boolean;
}

export type BillingStatus = 'charged' | 'failed' | 'skipped';

/** A call's one billing outcome. */
export interface CallOutcome {
  callId: string;
  tenantId: string;
  direction: Direction;
  status: BillingStatus;
  creditsCharged: number;
  creditsError?: string;
  balanceAfter?: number;
  transactionId?: string;
  /** The charging row's place in the wallet's chain (its `credits.usage` event is named after it). */
  ledgerSeq?: number;
  sandbox: boolean;
  durationSeconds: number;
  endedAt: Date;
  billedAt: Date;
  contactId?: string;
  campaignId?: string;
  agentId?: string;
  fromNumber?: string;
}
