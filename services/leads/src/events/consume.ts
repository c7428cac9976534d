import type { EventSubscriber } from '@voiceapi/kit';
import { voiceapi } from '@voiceapi/proto';
import type { CreditView } from '../usecases/credit-check';
import type { Dialing } from '../usecases/dialing';
import type { Messaging } from '../usecases/messaging';

const { TelephonyCallEvent, LeadsEvent, LeadsMessageEvent, BillingEvent, BillingCreditEvent } = voiceapi.events.v1;

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
 * Sends the messages requested on `leads.message.v1` (and on `leads.v1`, which carries every kind
 * of leads event, until every leads replica sends them to the former), through the message adapter.
 */
export function sendRequestedMessages(subscriber: EventSubscriber, messaging: Messaging): EventSubscriber {
  const send = async (m: voiceapi.events.v1.MessageRequested) => messaging.deliver(m.tenantId, m.messageId);
  return subscriber
    .on(LeadsMessageEvent, (event) =>
      event.event?.$case === 'messageRequested' ? send(event.event.messageRequested) : Promise.resolve(),
    )
    .on(LeadsEvent, (event) =>
      event.event?.$case === 'messageRequested' ? send(event.event.messageRequested) : Promise.resolve(),
    );
}

/**
 * Keeps lead ingest's view of each tenant's credit from what billing announces of it
 * (`billing.credit.v1`, and `billing.v1` until every billing replica sends to the former).
 */
export function followCredit(subscriber: EventSubscriber, view: CreditView): EventSubscriber {
  const seen = (c: voiceapi.events.v1.CreditsAvailable | undefined) => {
    if (c) view.seen(c.tenantId, { seq: c.seq, longestOutboundCallSeconds: c.longestOutboundCallSeconds });
    return Promise.resolve();
  };
  return subscriber
    .on(BillingCreditEvent, (event) =>
      seen(event.event?.$case === 'creditsAvailable' ? event.event.creditsAvailable : undefined),
    )
    .on(BillingEvent, (event) =>
      seen(event.event?.$case === 'creditsAvailable' ? event.event.creditsAvailable : undefined),
    );
}
