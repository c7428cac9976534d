import { eventRecord, type Outbox } from '@voiceapi/kit/events';
import { scopeOfRecord } from '@voiceapi/kit/grpc';
import { voiceapi } from '@voiceapi/proto';
import type { Call, CallCharge } from '../domain/call';
import type { CallChangeKind } from '../domain/call-feed';
import { callProto } from '../grpc/telephony-server';
import type { FeedFollowers } from '../usecases/call-feed';
import type { CallEvents } from '../usecases/ports';

const { TelephonyCallEvent, TelephonyCallFeedEvent, CallDirection } = voiceapi.events.v1;
/** What both events say of the call. */
const facts = (call: Call) => ({
  callId: call.id,
  tenantId: call.tenantId,
  direction:
    call.direction === 'outbound' ? CallDirection.CALL_DIRECTION_OUTBOUND : CallDirection.CALL_DIRECTION_INBOUND,
  sandbox: call.sandbox,
  ...(call.campaignId && { campaignId: call.campaignId }),
  ...(call.agentId && { agentId: call.agentId }),
  ...(call.dialId && { dialId: call.dialId }),
});

/**
 * A call's start, end and late charge on `telephony.call.v1`, and its changes on `telephony.call.feed.v1` while the
 * tenant follows: sent at once, or via the outbox while it holds events or Kafka is slow (decision 0144). An end is
 * announced before its row records it, so a crash announces it again; stable event ids let consumers skip repeats.
 */
export function callEvents(outbox: Outbox, followers: Pick<FeedFollowers, 'follows'>): CallEvents {
  const announce = (call: Call, at: Date, event: voiceapi.events.v1.TelephonyCallEvent['event'], eventId: string) =>
    outbox.publishOrAdd([eventRecord(TelephonyCallEvent, call.id, { occurTime: at, event }, eventId)]);
  return {
    // Keyed by tenant: one tenant's changes reach the feed's writer in the order stored here.
    changed: async (call: Call, change: CallChangeKind, at: Date) => {
      if (!(await followers.follows(scopeOfRecord(call.tenantId)))) return;
      const callChanged = { tenantId: call.tenantId, change, call: callProto(call) };
      await outbox.publishOrAdd([
        eventRecord(
          TelephonyCallFeedEvent,
          call.tenantId,
          { occurTime: at, event: { $case: 'callChanged', callChanged } },
          `feed:${call.id}:${change}`,
        ),
      ]);
    },
    started: (call, at) =>
      announce(
        call,
        at,
        {
          $case: 'callStarted',
          callStarted: {
            ...facts(call),
            startTime: call.answeredAt ?? call.startedAt,
            ...(call.contactId && { contactId: call.contactId }),
          },
        },
        `call-started:${call.id}`,
      ),
    ended: (call, { at, result: r, holdFailed, endReason, charge }) =>
      announce(
        call,
        at,
        {
          $case: 'callEnded',
          callEnded: callEnded(call, {
            at,
            durationSeconds: r.durationSeconds,
            outcome: r.outcome,
            holdFailed,
            ...(endReason && { endReason }),
            ...(r.analysis && { analysis: r.analysis }),
            ...(charge && { charge }),
          }),
        },
        `call-ended:${call.id}`,
      ),
    // The call as its row says it ended (the analysis stays with its details), with its charge.
    settled: (call, charge) =>
      announce(
        call,
        charge.billedAt,
        {
          $case: 'callSettled',
          callSettled: {
            call: callEnded(call, {
              ...(call.endedAt && { at: call.endedAt }),
              durationSeconds: call.durationSeconds,
              outcome: call.outcome ?? 'failed',
              holdFailed: call.holdFailed,
              ...(call.endReason && { endReason: call.endReason }),
              charge,
            }),
          },
        },
        `call-settled:${call.id}`,
      ),
  };
}

/** A call's end as both CallEnded and CallSettled say it. */
function callEnded(
  call: Call,
  end: {
    at?: Date;
    durationSeconds: number;
    outcome: string;
    holdFailed: boolean;
    endReason?: string;
    analysis?: voiceapi.events.v1.CallAnalysis;
    charge?: CallCharge;
  },
): voiceapi.events.v1.CallEnded {
  return {
    ...facts(call),
    durationSeconds: end.durationSeconds,
    startTime: call.startedAt,
    ...(end.at && { endTime: end.at }),
    holdFailed: end.holdFailed,
    free: false,
    outcome: end.outcome,
    optOut: end.analysis?.optOut ?? false,
    ...(call.agentName && { agentName: call.agentName }),
    // A call dropped before it was dialled is not news for leads (it refused the claim and moved the contact on).
    ...(call.contactId && end.endReason !== 'not_dialled' && { contactId: call.contactId }),
    ...(end.endReason && { endReason: end.endReason }),
    ...(end.analysis && { analysis: end.analysis }),
    ...(call.fromNumber && { fromNumber: call.fromNumber }),
    ...(call.toNumber && { toNumber: call.toNumber }),
    ...(end.charge && { charge: chargeProto(end.charge) }),
  };
}

function chargeProto(c: CallCharge): voiceapi.events.v1.CallCharge {
  return {
    billingStatus: c.billingStatus,
    creditsCharged: c.creditsCharged,
    ...(c.creditsError !== undefined && { creditsError: c.creditsError }),
    ...(c.transactionId !== undefined && { transactionId: c.transactionId }),
    ...(c.ledgerSeq !== undefined && { ledgerSeq: c.ledgerSeq }),
    ...(c.balanceAfter !== undefined && { balanceAfter: c.balanceAfter }),
    billTime: c.billedAt,
  };
}
