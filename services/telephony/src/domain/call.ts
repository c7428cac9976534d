import { createHash, randomBytes } from 'node:crypto';
import type { CallAnalysis, CallOutcome, TranscriptTurn } from '../carrier/carrier';

export type Direction = 'outbound' | 'inbound';
/** A call's progress; an ended call's status is its outcome, voicemail counting as completed. */
export type CallStatus = 'queued' | 'ringing' | 'in_progress' | 'completed' | 'busy' | 'no_answer' | 'failed';
export type BillingStatus = 'pending' | 'charged' | 'failed' | 'skipped';

export const DIRECTIONS: readonly Direction[] = ['outbound', 'inbound'];
export const CALL_STATUSES: readonly CallStatus[] = [
  'queued',
  'ringing',
  'in_progress',
  'completed',
  'busy',
  'no_answer',
  'failed',
];
export const ACTIVE_STATUSES: readonly CallStatus[] = ['queued', 'ringing', 'in_progress'];

export const statusOfOutcome = (o: CallOutcome): CallStatus => (o === 'voicemail' ? 'completed' : o);

/** One call of the call list (`GET /calls`: inbound and outbound together); the live feed is `call_feed`. */
export interface Call {
  id: string;
  tenantId: string;
  direction: Direction;
  status: CallStatus;
  outcome?: CallOutcome;
  /** Outbound: the dial request it placed (`<contactId>:<n>`). */
  dialId?: string;
  contactId?: string;
  campaignId?: string;
  agentId?: string;
  agentName?: string;
  fromNumber: string | null;
  toNumber: string | null;
  carrierCallId?: string;
  startedAt: Date;
  answeredAt?: Date;
  endedAt?: Date;
  durationSeconds: number;
  maxCallSeconds: number;
  /** Inbound simulation: the talk time the operator asked for. */
  talkSeconds?: number;
  endReason?: string;
  sandbox: boolean;
  /** Inbound: answered although its hold could not be placed. */
  holdFailed: boolean;
  billingStatus: BillingStatus;
  creditsCharged?: number;
  creditsError?: string;
  balanceAfter?: number;
  hasTranscript: boolean;
  hasAnalysis: boolean;
  hasRecording: boolean;
  /** Where its audio is (object storage), once stored: `hasRecording` is true only then. */
  recording?: RecordingRef;
  summary?: string;
  /** The contact was deleted: the call's personal data is gone, and nothing more is stored. */
  erased?: boolean;
  /** Ended without its charge (billing could not be reached): when settling it is tried again. */
  settleDueAt?: Date;
  /** Ended while object storage could not take its recording: when storing it is tried again. */
  recordingDueAt?: Date;
}

/** A call's recording as object storage holds it: what describes the audio, never the audio. */
export interface RecordingRef {
  key: string;
  contentType: string;
  sizeBytes: number;
  durationSeconds: number;
  /** When the object was written: a retention period counts from here. */
  storedAt: Date;
}

/** A call's charge as billing settled it (billing prices and posts it; telephony carries it). */
export interface CallCharge {
  billingStatus: Exclude<BillingStatus, 'pending'>;
  creditsCharged: number;
  creditsError?: string;
  /** The ledger row that charged it and its place in the wallet's chain; unset when none was written. */
  transactionId?: string;
  ledgerSeq?: number;
  balanceAfter?: number;
  billedAt: Date;
}

export const billingFields = (
  c: CallCharge,
): Pick<Call, 'billingStatus' | 'creditsCharged'> & Partial<Pick<Call, 'creditsError' | 'balanceAfter'>> => ({
  billingStatus: c.billingStatus,
  creditsCharged: c.creditsCharged,
  ...(c.creditsError !== undefined && { creditsError: c.creditsError }),
  ...(c.balanceAfter !== undefined && { balanceAfter: c.balanceAfter }),
});

export interface CallDetails {
  transcript: TranscriptTurn[];
  analysis?: CallAnalysis;
}

/** Follows from the dial request, so every try names the same call and the unique insert lets exactly one dial. */
export const outboundCallId = (tenantId: string, dialId: string): string => `call_${sha(`${tenantId}|${dialId}`)}`;

const sha = (s: string): string => createHash('sha256').update(s).digest('hex').slice(0, 24);
export const newCallId = (): string => `call_${randomBytes(12).toString('hex')}`;
