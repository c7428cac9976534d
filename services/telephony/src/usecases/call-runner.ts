import { countFallback, retryTransient } from '@voiceapi/kit/errors';
import { scopeOfRecord } from '@voiceapi/kit/grpc';
import { DeadlineCounter } from '@voiceapi/kit/metrics';
import type { LateAttributes, NoAttributes, TypedCounter } from '@voiceapi/kit/metrics';
import type { Logger } from '@voiceapi/kit/service';
import type { CarrierAdapter, CarrierCallRequest, CarrierCallResult } from '../carrier/carrier';
import { billingFields, statusOfOutcome, type Call, type CallCharge } from '../domain/call';
import type { CallChangeKind } from '../domain/call-feed';
import type { CallEnd, CallStore } from '../store/call-store';
import type { LineStore } from '../store/line-store';
import type { RollupStore } from '../store/rollup-store';
import type { AgentConversation, AnsweringAgents, CallEvents, Wallet } from './ports';
import type { RecordingKeeper } from './recording-keeper';

/** How long a call's end is tried again before recovery is left to finish it. */
const FINISH_RETRY_MS = 60_000;
/** A call that ended without its charge (billing away) is settled again from this long after its end. */
export const SETTLE_AGAIN_AFTER_MS = 5_000;
/** The call-charge SLO's threshold (observability/slos.yaml): a call charged later than this after its end is late. */
const CHARGE_DEADLINE_MS = 60_000;

/** The wallet a call is settled in: its tenant's, in the key mode it was made with. */
export const scopeOfCall = (call: Pick<Call, 'tenantId' | 'sandbox'>) =>
  scopeOfRecord(call.tenantId, call.sandbox ? 'sandbox' : 'live');

export interface RunnerDeps {
  calls: CallStore;
  recordings: RecordingKeeper;
  lines: LineStore;
  rollups: RollupStore;
  carrier: CarrierAdapter;
  wallet: Wallet;
  agents: AnsweringAgents;
  events: CallEvents;
  log: Logger;
  now: () => Date;
  /** Calls ended, counted once each where the end is written; and charged in time or late (the call-charge SLO). */
  metrics?: {
    ended: TypedCounter<{ direction: Call['direction'] }>;
    charged?: TypedCounter<LateAttributes<NoAttributes>>;
  };
}

export const carrierRequest = (call: Call): CarrierCallRequest => ({
  callId: call.id,
  direction: call.direction,
  from: call.fromNumber,
  to: call.toNumber ?? '',
  maxCallSeconds: call.maxCallSeconds,
  ...(call.talkSeconds !== undefined && { talkSeconds: call.talkSeconds }),
});

/** Carries a call from ringing to its end; each step is idempotent by call id, so recovery can finish it. */
export class CallRunner {
  /** Calls this process is carrying: recovery leaves them alone. */
  readonly carrying = new Set<string>();
  private readonly charged?: DeadlineCounter<NoAttributes>;

  constructor(private readonly d: RunnerDeps) {
    if (d.metrics?.charged)
      this.charged = new DeadlineCounter(d.metrics.charged, CHARGE_DEADLINE_MS, { initial: [{}], now: () => +d.now() });
  }

  async run(call: Call): Promise<Call | null> {
    this.carrying.add(call.id);
    try {
      let answer: Promise<{ holdFailed: boolean }> | undefined;
      let answered: { answeredAt: Date; carrierCallId: string } | undefined;
      let conversation: Promise<AgentConversation | undefined> | undefined;
      let result: CarrierCallResult;
      try {
        result = await this.d.carrier.place(carrierRequest(call), {
          // eslint-disable-next-line @typescript-eslint/require-await -- the carrier awaits this hook; a throw stays a rejection, never in the call's way
          answered: async (at, sid) => {
            // Beside the call, never in its way: the store or billing being away must not hang up on a person.
            answer = this.recordAnswer(call, at, sid);
            answered = { answeredAt: at, carrierCallId: sid };
            if (call.agentId) conversation = this.converse(call, call.agentId, at);
          },
        });
      } catch (err) {
        this.d.log.warn({ err, callId: call.id }, 'the carrier failed a call');
        await answer;
        // An outbound row does not hold its answer (decision 0148): the end carries it.
        const failed = { carrierCallId: call.carrierCallId ?? '', durationSeconds: 0, cutAtLimit: false, ...answered };
        return await this.finishRetrying(call, { ...failed, outcome: 'failed' }, 'carrier_error');
      }
      const { holdFailed } = (await answer) ?? { holdFailed: false };
      const held = await conversation;
      if (held) result = withConversation(result, held);
      return await this.finishRetrying({ ...call, holdFailed }, result);
    } finally {
      this.carrying.delete(call.id);
    }
  }

  /** The answer's bookkeeping, retried as long as the call may last; what still fails is only logged. */
  private async recordAnswer(call: Call, at: Date, sid: string): Promise<{ holdFailed: boolean }> {
    const deadline = Date.now() + this.d.carrier.longestMs(carrierRequest(call));
    const retry = <T>(step: () => Promise<T>) =>
      retryTransient(step, {
        deadline,
        onRetry: (err) => this.d.log.warn({ err, callId: call.id }, "recording a call's answer failed; trying again"),
      });
    let holdFailed = false;
    try {
      // Inbound holds are placed on answer; a patient reaches the clinic even without credit (billed as failed).
      if (call.direction === 'inbound' && !call.sandbox)
        holdFailed = (await retry(() => this.placeHold(call))) === 'insufficient';
      // Only inbound rows record the answer, for recovery (decision 0148). A write cut by a crash may apply: read back.
      const answered: Call | null =
        call.direction === 'outbound'
          ? { ...call, status: 'in_progress', answeredAt: at, carrierCallId: sid, holdFailed }
          : await retry(
              async () =>
                (await this.d.calls.setAnswered(call.id, at, sid, holdFailed)) ?? (await this.d.calls.byId(call.id)),
            );
      if (answered?.status === 'in_progress') {
        await retry(() => this.d.events.started(answered, this.d.now()));
        await retry(() => this.announce(answered, 'call.answered'));
      }
    } catch (err) {
      this.d.log.warn(
        { err, callId: call.id },
        "the call's answer could not be recorded; the call goes on and its end is recorded",
      );
    }
    return { holdFailed };
  }

  /** The agent's side of the call; undefined (the carrier's own record stands) when it failed. */
  private async converse(call: Call, agentId: string, answeredAt: Date): Promise<AgentConversation | undefined> {
    try {
      // It cannot take longer than the call itself may.
      const req = { agentId, callId: call.id, callerNumber: call.fromNumber ?? '', answeredAt };
      return await this.d.agents.converse(
        scopeOfRecord(call.tenantId),
        req,
        this.d.carrier.longestMs(carrierRequest(call)),
      );
    } catch (err) {
      countFallback({ dependency: 'agents', operation: 'HoldConversation' }, err);
      this.d.log.warn(
        { err, callId: call.id },
        'the agent could not hold the conversation; the call goes on without it',
      );
      return undefined;
    }
  }

  /** A change of the call a tenant may follow live (`GET /calls/stream`), with the call as it is after it. */
  announce(call: Call, change: CallChangeKind, at = this.d.now()): Promise<void> {
    return this.d.events.changed(call, change, at);
  }

  placeHold(call: Call): Promise<'placed' | 'insufficient'> {
    const expiresAt = new Date(this.d.now().getTime() + this.d.carrier.longestMs(carrierRequest(call)) + 10 * 60_000);
    return this.d.wallet.placeHold(
      scopeOfRecord(call.tenantId),
      call.id,
      call.direction,
      call.maxCallSeconds,
      expiresAt,
    );
  }

  /** `finish`, tried again while the store or billing is away for a while; after that, recovery finishes the call. */
  finishRetrying(call: Call, r: CarrierCallResult, reason?: string): Promise<Call | null> {
    return retryTransient(() => this.finish(call, r, reason), {
      deadline: Date.now() + FINISH_RETRY_MS,
      onRetry: (err) => this.d.log.warn({ err, callId: call.id }, "recording a call's end failed; trying again"),
    });
  }

  /** The call's charge from billing; undefined when billing cannot answer now (the call is settled again later). */
  private async settle(call: Call): Promise<CallCharge | undefined> {
    // With the facts its end announces: a call never dialled names no contact.
    const facts = { ...call };
    if (call.endReason === 'not_dialled') delete facts.contactId;
    try {
      return await this.d.wallet.settle(scopeOfCall(call), facts);
    } catch (err) {
      countFallback({ dependency: 'billing', operation: 'SettleCalls' }, err);
      this.d.log.warn(
        { err, callId: call.id },
        'billing could not settle a call as it ended; it ends pending and is settled again',
      );
      return undefined;
    }
  }

  /** Settles calls that ended without their charge, each announced (CallSettled); returns the number settled. */
  async settlePending(limit: number): Promise<number> {
    const due = await this.d.calls.dueForSettlement(this.d.now(), limit);
    const settled = await Promise.all(
      due.map(async (call) => {
        const charge = await this.settle(call);
        // Still unsettled: counted late once its minute passes, whenever billing answers.
        if (!charge) this.charged?.wait(call.id, call.endedAt ?? call.startedAt, {});
        if (!charge) return 0;
        // Announced before the row says settled: a crash in between settles it again (same charge, same event id).
        await this.d.events.settled(call, charge);
        const billed = await this.d.calls.setBilling(call.id, call.tenantId, billingFields(charge));
        if (billed) {
          this.charged?.done(call.id, call.endedAt ?? call.startedAt, this.d.now(), {});
          await this.d.rollups.markDirty(scopeOfRecord(call.tenantId), call.direction, call.startedAt, this.d.now());
          await this.announce(billed, 'call.billed');
        }
        return 1;
      }),
    );
    return settled.reduce<number>((n, x) => n + x, 0);
  }

  /** Ends a call with the carrier's result; null when it had ended already. */
  async finish(call: Call, r: CarrierCallResult, reason?: string): Promise<Call | null> {
    const scope = scopeOfRecord(call.tenantId);
    const now = this.d.now();
    const latest = (await this.d.calls.byId(call.id)) ?? call;
    // A contact deleted mid-call: its conversation is not kept.
    const keep = !latest.erased;
    const stored = keep && r.recording ? await this.d.recordings.store(call, r.recording) : undefined;
    const endReason = reason ?? (r.cutAtLimit ? 'max_call_seconds' : call.endReason);
    const holdFailed = latest.holdFailed || call.holdFailed;
    // Settled with billing as it ends; a repeat (recovery) is answered the charge that stands.
    const charge = await this.settle({
      ...latest,
      durationSeconds: r.durationSeconds,
      endedAt: now,
      holdFailed,
      ...(endReason && { endReason }),
    });
    // Announced before the row says it ended: after a crash, recovery finishes it again and the event is stored once.
    await this.d.events.ended(call, {
      at: now,
      result: r,
      holdFailed,
      ...(endReason && { endReason }),
      ...(charge && { charge }),
    });
    const end: CallEnd = {
      status: statusOfOutcome(r.outcome),
      outcome: r.outcome,
      endedAt: now,
      durationSeconds: r.durationSeconds,
      hasTranscript: keep && (r.transcript?.length ?? 0) > 0,
      hasAnalysis: keep && r.analysis !== undefined,
      // Only once the object exists: a failed put leaves the call without one until it is stored again.
      hasRecording: stored !== undefined && 'recording' in stored,
      ...stored,
      holdFailed,
      // The answer's own record may have failed while the store was away.
      ...(r.answeredAt && !latest.answeredAt && { answeredAt: r.answeredAt }),
      ...(keep && r.analysis && { summary: r.analysis.summary }),
      ...(endReason && { endReason }),
      ...(r.carrierCallId && { carrierCallId: r.carrierCallId }),
      // Without its charge, it is settled again shortly (`settlePending`).
      ...(charge ? billingFields(charge) : { settleDueAt: new Date(now.getTime() + SETTLE_AGAIN_AFTER_MS) }),
    };
    // The feed's changes too, before the row (as the call's end above): the call as it will read.
    await this.announce({ ...latest, ...end }, 'call.ended', now);
    if (charge) await this.announce({ ...latest, ...end }, 'call.billed', now);
    // The conversation joins the end's write (decision 0146), never the feed's events above.
    const details =
      keep && r.transcript ? { transcript: r.transcript, ...(r.analysis && { analysis: r.analysis }) } : undefined;
    const ended = await this.d.calls.finish(call.id, { ...end, ...(details && { details }) });
    // Null: the row had ended already (a repeated finish), counted by the finish that ended it.
    if (ended) this.d.metrics?.ended.add(1, { direction: ended.direction });
    // Charged as it ended: in time. Without its charge, the settling pass counts it.
    if (ended && charge) this.charged?.done(call.id, now, now, {});
    // Erased while it ended: its recording and conversation go too (again on a repeat: a try may have died first).
    if (ended?.erased && ended.hasRecording) await this.d.recordings.discard(ended);
    if ((ended ?? latest).erased && (details || !ended)) await this.d.calls.erasePersonalData(scope, call.id);
    await this.d.lines.free(scope, call.id);
    await this.d.rollups.markDirty(scope, call.direction, call.startedAt, now);
    return ended;
  }
}

/** The carrier's result with the agent's conversation as transcript and analysis (unanswered calls keep theirs). */
export function withConversation(result: CarrierCallResult, c: AgentConversation): CarrierCallResult {
  if (!result.answeredAt || !result.transcript) return result;
  const start = result.answeredAt.getTime();
  const first = result.transcript[0]?.at.getTime() ?? start;
  const last = result.transcript.at(-1)?.at.getTime() ?? start;
  const step = c.turns.length > 1 ? (last - first) / (c.turns.length - 1) : 0;
  return {
    ...result,
    transcript: c.turns.map((t, i) => ({ role: t.role, text: t.text, at: new Date(first + i * step) })),
    analysis: {
      summary: c.summary,
      sentiment: c.outcome === 'appointment_booked' ? 'positive' : 'neutral',
      outcome: c.outcome,
      optOut: false,
    },
  };
}
