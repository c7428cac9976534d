import type { EventSubscriber } from '@voiceapi/kit/events';
import { voiceapi } from '@voiceapi/proto';
import type { CreditView } from '../usecases/credit-check';
import type { Dialing } from '../usecases/dialing';
import type { Messaging } from '../usecases/messaging';

const { TelephonyCallEvent, LeadsMessageEvent, BillingCreditEvent } = voiceapi.events.v1;

/** Follows the outcome of every lead's call telephony reports (inbound calls and others' calls are not ours). */
export function followCallOutcomes(subscriber: EventSubscriber, dialing: Dialing): EventSubscriber {
  return subscriber.on(TelephonyCallEvent, async (event) => {
    if (event.event?.$case === 'callStarted') {
      const s = event.event.callStarted;
      if (s.contactId && s.tenantId && !s.sandbox) await dialing.onCallStarted(s.tenantId, s.contactId, s.campaignId);
      return;
    }
    if (event.event?.$case !== 'callEnded') return;
    const e = event.event.callEnded;
    if (!e.contactId || e.sandbox) return;
    if (!e.tenantId || !e.callId) throw new Error(`CallEnded for contact ${e.contactId} without a tenant or call id`);
    await dialing.onCallEnded({
      tenantId: e.tenantId,
      contactId: e.contactId,
      callId: e.callId,
      outcome: e.outcome,
      optOut: e.optOut,
      endedAt: e.endTime ?? event.occurTime ?? new Date(),
      ...(e.endReason && { endReason: e.endReason }),
    });
  });
}

/**
 * Sends the messages requested on `leads.message.v1` through the message adapter (`leads.v1`, written
 * before leads 1.2.0, is read no more since leads 1.3.2: 1.2.0, 1.3.0 and 1.3.1 shipped without writing it).
 */
export function sendRequestedMessages(subscriber: EventSubscriber, messaging: Messaging): EventSubscriber {
  return subscriber.on(LeadsMessageEvent, async (event) => {
    if (event.event?.$case !== 'messageRequested') return;
    const m = event.event.messageRequested;
    await messaging.deliver(m.tenantId, m.messageId);
  });
}

/**
 * Keeps lead ingest's view of each tenant's credit from what billing announces of it
 * (`billing.credit.v1`; `billing.v1`, written before billing 1.2.0, is read no more since leads 1.3.2:
 * billing 1.2.0 and 1.2.1 shipped without writing it).
 */
export function followCredit(subscriber: EventSubscriber, view: CreditView): EventSubscriber {
  return subscriber.on(BillingCreditEvent, (event) => {
    const c = event.event?.$case === 'creditsAvailable' ? event.event.creditsAvailable : undefined;
    if (c) view.seen(c.tenantId, { seq: c.seq, longestOutboundCallSeconds: c.longestOutboundCallSeconds });
    return Promise.resolve();
  });
}
