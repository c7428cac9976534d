import type { TenantScope } from '@voiceapi/kit';
import type { Direction } from '../domain/call';

/** Billing, as telephony needs it (adapted from the billing gRPC client in main). */
export interface Wallet {
  /** Reserves the longest possible cost of a call; `insufficient` when the wallet cannot cover it. */
  placeHold(scope: TenantScope, callId: string, direction: Direction, maxCallSeconds: number, expiresAt: Date): Promise<'placed' | 'insufficient'>;
  /** A number purchase: idempotent by reference; `insufficient` when the wallet cannot cover it. */
  debitNumber(scope: TenantScope, reference: string, amount: number, description: string): Promise<{ creditsCharged: number; balanceAfter: number } | 'insufficient'>;
}

export type ClaimResult = { allowed: true; maxCallSeconds: number; agentName?: string; campaignId: string } | { allowed: false; refusal: string };

/** Leads, as the dialer needs it: the checks again, and the claim of a dial id (once). */
export interface DialClaims {
  claim(scope: TenantScope, contactId: string, dialId: string): Promise<ClaimResult>;
}
