import type { TenantScope } from '@voiceapi/kit/grpc';
import type { CarrierCallResult, TranscriptTurn } from '../carrier/carrier';
import type { Call, CallCharge, Direction } from '../domain/call';
import type { CallChangeKind } from '../domain/call-feed';

/** Billing, as telephony needs it (adapted from the billing gRPC client in main). */
export interface Wallet {
  /** Reserves the longest possible cost of a call; `insufficient` when the wallet cannot cover it. */
  placeHold(
    scope: TenantScope,
    callId: string,
    direction: Direction,
    maxCallSeconds: number,
    expiresAt: Date,
  ): Promise<'placed' | 'insufficient'>;
  /** Settles an ended call (batched); idempotent by call id; throws when billing cannot answer. */
  settle(scope: TenantScope, call: Call): Promise<CallCharge>;
  /** A number purchase: idempotent by reference; `insufficient` when the wallet cannot cover it. */
  debitNumber(
    scope: TenantScope,
    reference: string,
    amount: number,
    description: string,
  ): Promise<{ creditsCharged: number; balanceAfter: number } | 'insufficient'>;
}

export type ClaimResult =
  | { allowed: true; maxCallSeconds: number; agentName?: string; fromNumber?: string; campaignId: string }
  | { allowed: false; refusal: string };

/** Leads, as the dialer needs it: the checks again, and the claim of a dial id (once). */
export interface DialClaims {
  claim(scope: TenantScope, contactId: string, dialId: string): Promise<ClaimResult>;
}

/** What an agent said and did on a call: the transcript's turns, and the summary for the feed. */
export interface AgentConversation {
  turns: Pick<TranscriptTurn, 'role' | 'text'>[];
  summary: string;
  outcome: string;
}

/** Agents, as inbound calls need them (adapted from the agents gRPC client in main). */
export interface AnsweringAgents {
  /** The agent that answers calls to this owned number; null: the platform's default answering. */
  answering(scope: TenantScope, phoneNumberId: string): Promise<{ agentId: string; agentName: string } | null>;
  /** The conversation the agent holds on a call once it picked up (it may call the tenant's API). */
  converse(
    scope: TenantScope,
    call: { agentId: string; callId: string; callerNumber: string; answeredAt: Date },
    timeoutMs: number,
  ): Promise<AgentConversation>;
}

/** What telephony announces of a call (`telephony.call.v1`, through the outbox); a repeat stores nothing new. */
export interface CallEvents {
  /** A change a tenant may follow live (`GET /calls/stream`), with the call after it; once per call and change. */
  changed(call: Call, change: CallChangeKind, at: Date): Promise<void>;
  started(call: Call, at: Date): Promise<void>;
  /** The call's end, with its charge when billing settled it then. */
  ended(
    call: Call,
    end: { at: Date; result: CarrierCallResult; holdFailed: boolean; endReason?: string; charge?: CallCharge },
  ): Promise<void>;
  /** The charge of a call that ended without one (billing was away), once settled. */
  settled(call: Call, charge: CallCharge): Promise<void>;
}
