import type { Readable } from 'node:stream';

/**
 * What the platform needs from a telephone carrier. The default adapter is the simulator (no
 * telephone network is reachable from development machines); a real carrier plugs in here.
 */
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

/**
 * A call's recording as the carrier holds it (a real one keeps it for a while at its own address):
 * opened as a stream, read as it arrives, never whole in memory; opened again if a store failed.
 */
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
  /** Cut at `maxCallSeconds`. */
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
  /**
   * The end of a call this adapter was carrying when its process died, once that end is due
   * (undefined while the call would still be running).
   */
  recover(req: CarrierCallRequest, startedAt: Date, now: Date): CarrierCallResult | undefined;
  /** Wall-clock milliseconds a call of this request can take at most (ringing and the longest talk). */
  longestMs(req: CarrierCallRequest): number;
  /**
   * A finished call's recording asked for again (a carrier keeps them for a while at its own
   * address): when storing it failed as the call ended. Undefined when the carrier has none.
   */
  recordingOf(call: { callId: string; carrierCallId: string; durationSeconds: number }): Recording | undefined;
}
