import type { Readable } from 'node:stream';

/** What the platform needs from a carrier; the simulator is the default (dev machines reach no phone network). */
export type CallOutcome = 'completed' | 'no_answer' | 'busy' | 'failed' | 'voicemail';

export interface TranscriptTurn {
  role: 'agent' | 'caller';
  text: string;
  at: Date;
}

export interface CallAnalysis {
  summary: string;
  sentiment: 'positive' | 'neutral' | 'negative';
  outcome: string;
  optOut: boolean;
}

/** A recording the carrier holds, streamed as it arrives (never whole in memory); opened again if storing failed. */
export interface Recording {
  contentType: string;
  sizeBytes: number;
  /** The audio's length: the call's talk time. */
  durationSeconds: number;
  open(): Readable;
}

export interface CarrierCallRequest {
  callId: string;
  direction: 'outbound' | 'inbound';
  from: string | null;
  to: string;
  /** The call is ended when its talk time reaches this. */
  maxCallSeconds: number;
  /** Inbound simulation: the talk time the caller stays, when the operator names it. */
  talkSeconds?: number;
}

/** How a call ended. `durationSeconds` is talk time as the carrier reports it, never wall time. */
export interface CarrierCallResult {
  carrierCallId: string;
  outcome: CallOutcome;
  durationSeconds: number;
  cutAtLimit: boolean;
  answeredAt?: Date;
  transcript?: TranscriptTurn[];
  analysis?: CallAnalysis;
  recording?: Recording;
}

export interface CarrierHooks {
  /** The called party (or, inbound, the agent) picked up. */
  answered(at: Date, carrierCallId: string): Promise<void>;
}

export interface CarrierAdapter {
  readonly name: string;
  /** Places (outbound) or answers (inbound) a call; resolves when it has ended. */
  place(req: CarrierCallRequest, hooks: CarrierHooks): Promise<CarrierCallResult>;
  /** The end of a call whose process died, once due (undefined while the call would still be running). */
  recover(req: CarrierCallRequest, startedAt: Date, now: Date): CarrierCallResult | undefined;
  /** Wall-clock milliseconds a call of this request can take at most (ringing and the longest talk). */
  longestMs(req: CarrierCallRequest): number;
  /** A finished call's recording again, when storing it failed; undefined when the carrier no longer has it. */
  recordingOf(call: { callId: string; carrierCallId: string; durationSeconds: number }): Recording | undefined;
}
