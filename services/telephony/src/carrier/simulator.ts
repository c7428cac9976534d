import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { toneWavStream, wavBytes } from './audio';
import type {
  CallAnalysis,
  CallOutcome,
  CarrierAdapter,
  CarrierCallRequest,
  CarrierCallResult,
  CarrierHooks,
  Recording,
  TranscriptTurn,
} from './carrier';

/** Simulated seconds a phone rings before it is answered or given up on. */
const RING_SECONDS = 3;

interface Script {
  outcome: CallOutcome;
  /** Talk time the scenario plays before either side hangs up. */
  talkSeconds: number;
  optOut: boolean;
}

const hash = (s: string): number => createHash('sha256').update(s).digest().readUInt32BE(0);

/** A number's scenario by its last digits (the operator API's table); any other completes after a hashed 15–180 s. */
export function scenarioOf(req: Pick<CarrierCallRequest, 'direction' | 'to' | 'from' | 'talkSeconds'>): Script {
  if (req.direction === 'inbound') {
    // The caller stays as long as the operator said, or as a hash of their number says.
    const talk = req.talkSeconds ?? 15 + (hash(req.from ?? req.to) % 166);
    return talk === 0
      ? { outcome: 'no_answer', talkSeconds: 0, optOut: false }
      : { outcome: 'completed', talkSeconds: talk, optOut: false };
  }
  const digits = req.to.replace(/\D/g, '');
  switch (digits.slice(-4)) {
    case '0000':
      return { outcome: 'completed', talkSeconds: 42, optOut: false };
    case '0001':
      return { outcome: 'no_answer', talkSeconds: 0, optOut: false };
    case '0002':
      return { outcome: 'busy', talkSeconds: 0, optOut: false };
    case '0003':
      return { outcome: 'failed', talkSeconds: 0, optOut: false };
    case '0004':
      return { outcome: 'voicemail', talkSeconds: 20, optOut: false };
    case '0005':
      return { outcome: 'completed', talkSeconds: 30, optOut: true };
    default:
      return { outcome: 'completed', talkSeconds: 15 + (hash(digits) % 166), optOut: false };
  }
}

/**
 * The default carrier: plays scenarios `speedup` times faster than real time, charging simulated durations. Results
 * are pure functions of the request, so a call whose process died is finished the same way later.
 */
export class SimulatorCarrier implements CarrierAdapter {
  readonly name = 'simulator';

  constructor(
    private readonly speedup: number,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async place(req: CarrierCallRequest, hooks: CarrierHooks): Promise<CarrierCallResult> {
    const script = scenarioOf(req);
    const sid = carrierCallId(req.callId);
    const ring = req.direction === 'inbound' ? 0 : RING_SECONDS;
    await this.wait(ring);
    if (script.talkSeconds === 0) return this.result(req, script, undefined);
    const answeredAt = this.now();
    await hooks.answered(answeredAt, sid);
    await this.wait(Math.min(script.talkSeconds, req.maxCallSeconds));
    return this.result(req, script, answeredAt);
  }

  recover(req: CarrierCallRequest, startedAt: Date, now: Date): CarrierCallResult | undefined {
    const script = scenarioOf(req);
    const ring = req.direction === 'inbound' ? 0 : RING_SECONDS;
    const talk = script.talkSeconds === 0 ? 0 : Math.min(script.talkSeconds, req.maxCallSeconds);
    const endsAt = startedAt.getTime() + ((ring + talk) * 1000) / this.speedup;
    if (now.getTime() < endsAt) return undefined;
    return this.result(
      req,
      script,
      script.talkSeconds === 0 ? undefined : new Date(startedAt.getTime() + (ring * 1000) / this.speedup),
    );
  }

  /** Wall-clock milliseconds a call of this request takes at most (ringing and the longest talk). */
  longestMs(req: CarrierCallRequest): number {
    return ((RING_SECONDS + req.maxCallSeconds) * 1000) / this.speedup;
  }

  private wait(simulatedSeconds: number): Promise<void> {
    return simulatedSeconds > 0 ? sleep((simulatedSeconds * 1000) / this.speedup) : Promise.resolve();
  }

  private result(req: CarrierCallRequest, script: Script, answeredAt: Date | undefined): CarrierCallResult {
    const sid = carrierCallId(req.callId);
    if (!answeredAt) return { carrierCallId: sid, outcome: script.outcome, durationSeconds: 0, cutAtLimit: false };
    const duration = Math.min(script.talkSeconds, req.maxCallSeconds);
    const cutAtLimit = script.talkSeconds > req.maxCallSeconds;
    const conversation = converse(req, script, answeredAt, duration, this.speedup);
    return {
      carrierCallId: sid,
      outcome: script.outcome,
      durationSeconds: duration,
      cutAtLimit,
      answeredAt,
      transcript: conversation.transcript,
      analysis: conversation.analysis,
      recording: this.recordingOf({ callId: req.callId, durationSeconds: duration }),
    };
  }

  /** As long as the talk time (compressed here, but its audio is not): 3 minutes are 2.88 MB; made again alike. */
  recordingOf(call: { callId: string; durationSeconds: number }): Recording | undefined {
    if (call.durationSeconds <= 0) return undefined;
    return {
      contentType: 'audio/wav',
      sizeBytes: wavBytes(call.durationSeconds),
      durationSeconds: call.durationSeconds,
      open: () => toneWavStream(hash(call.callId), call.durationSeconds),
    };
  }
}

export const carrierCallId = (callId: string): string =>
  `SIM${createHash('sha256').update(callId).digest('hex').slice(0, 30)}`;

/** A short scripted conversation and its analysis, spread over the call's (simulated) talk time. */
function converse(
  req: CarrierCallRequest,
  script: Script,
  answeredAt: Date,
  duration: number,
  speedup: number,
): { transcript: TranscriptTurn[]; analysis: CallAnalysis } {
  const lines: [TranscriptTurn['role'], string][] =
    script.outcome === 'voicemail'
      ? [
          [
            'agent',
            'Hello, this is your assistant calling. Sorry we missed you; we will try again later, or call us back at your convenience.',
          ],
        ]
      : script.optOut
        ? [
            ['agent', 'Hello, this is your assistant calling about your recent enquiry. Is now a good time?'],
            ['caller', 'No. Please do not call me again.'],
            ['agent', 'Understood. We will not call you again. Goodbye.'],
          ]
        : req.direction === 'inbound'
          ? [
              ['agent', 'Hello, thank you for calling. How can I help you today?'],
              ['caller', 'I would like to book an appointment, please.'],
              ['agent', 'Of course. I have noted your request and someone will confirm the time with you.'],
              ['caller', 'Thank you.'],
            ]
          : [
              ['agent', 'Hello, this is your assistant calling about your recent enquiry. Is now a good time?'],
              ['caller', 'Yes, I was interested in learning more.'],
              ['agent', 'Great. I will send you the details and book a follow-up.'],
              ['caller', 'That works, thank you.'],
            ];
  const step = duration / lines.length;
  const transcript = lines.map(([role, text], i) => ({
    role,
    text,
    at: new Date(answeredAt.getTime() + (i * step * 1000) / speedup),
  }));
  const analysis: CallAnalysis =
    script.outcome === 'voicemail'
      ? {
          summary: 'Reached voicemail; a message was left.',
          sentiment: 'neutral',
          outcome: 'voicemail_left',
          optOut: false,
        }
      : script.optOut
        ? {
            summary: 'The called party asked not to be called again.',
            sentiment: 'negative',
            outcome: 'opted_out',
            optOut: true,
          }
        : req.direction === 'inbound'
          ? {
              summary: 'The caller asked to book an appointment; the request was noted.',
              sentiment: 'positive',
              outcome: 'appointment_requested',
              optOut: false,
            }
          : {
              summary: 'The contact is interested; details to be sent and a follow-up booked.',
              sentiment: 'positive',
              outcome: 'interested',
              optOut: false,
            };
  return { transcript, analysis };
}
