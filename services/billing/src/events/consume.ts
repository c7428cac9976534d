import type { EventSubscriber } from '@voiceapi/kit';
import { voiceapi } from '@voiceapi/proto';
import type { CallCharging } from '../usecases/calls';

const { TelephonyCallEvent, CallDirection } = voiceapi.events.v1;

/**
 * Charges each ended call telephony reports without its charge (redeliveries and replays settle
 * nothing twice): telephony of release 1.0, which left the charge to this stream. Telephony now
 * settles each call with billing as it ends (SettleCalls) and its end carries the charge.
 */
export function chargeEndedCalls(subscriber: EventSubscriber, charging: CallCharging): EventSubscriber {
  return subscriber.on(TelephonyCallEvent, async (event) => {
    if (event.event?.$case !== 'callEnded') return;
    const e = event.event.callEnded;
    if (e.charge) return;
    // A malformed fact is retried, then kept in the dead-letter topic for an operator.
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(e.callId) || e.tenantId === '' || e.direction === CallDirection.CALL_DIRECTION_UNSPECIFIED) {
      throw new Error(`CallEnded without a valid call id, tenant or direction (call ${JSON.stringify(e.callId)})`);
    }
    await charging.settle({
      callId: e.callId,
      tenantId: e.tenantId,
      direction: e.direction === CallDirection.CALL_DIRECTION_INBOUND ? 'inbound' : 'outbound',
      durationSeconds: Math.max(0, e.durationSeconds),
      sandbox: e.sandbox,
      free: e.free,
      holdFailed: e.holdFailed,
      endedAt: e.endTime ?? event.occurTime ?? new Date(),
      ...(e.contactId && { contactId: e.contactId }),
      ...(e.campaignId && { campaignId: e.campaignId }),
      ...(e.agentId && { agentId: e.agentId }),
      ...(e.direction === CallDirection.CALL_DIRECTION_OUTBOUND && e.fromNumber && { fromNumber: e.fromNumber }),
    });
  });
}
