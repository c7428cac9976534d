import { type EventMeta, type EventSubscriber } from '@voiceapi/kit/events';
import { scopeOfRecord } from '@voiceapi/kit/grpc';
import { voiceapi } from '@voiceapi/proto';
import { isCallChange, type CallSnapshot } from '../domain/call-feed';
import type { CallFeed } from '../usecases/call-feed';
import type { Calls } from '../usecases/calls';
import type { Dialer } from '../usecases/dialer';

const { LeadsDialEvent, TelephonyCallFeedEvent } = voiceapi.events.v1;

type DialFact = NonNullable<voiceapi.events.v1.LeadsDialEvent['event']>;

/**
 * Follows `leads.dial.v1`: holds each dial request until placed or dropped, uncommitted meanwhile (decision 0147);
 * drops a cancelled or deleted contact's dials and erases its calls' personal data. Keyed by contact, so these come
 * after its dial requests. `leads.v1` is read no more since telephony 1.3.0: leads 1.2.0, 1.3.0 and 1.3.1 shipped
 * without writing it (decision 0135).
 */
export function followLeads(subscriber: EventSubscriber, dialer: Dialer, calls: Calls): EventSubscriber {
  const act = async (fact: DialFact | undefined, occurTime: Date | undefined, meta: EventMeta) => {
    switch (fact?.$case) {
      case 'dialRequested': {
        const r = fact.dialRequested;
        if (!r.dialId || !r.tenantId || !r.contactId || !r.phone)
          throw new Error(`DialRequested ${r.dialId} lacks a tenant, contact or phone`);
        if (!meta.hold) throw new Error('dial requests are held until placed: the subscriber must hold commits');
        dialer.enqueue(
          scopeOfRecord(r.tenantId),
          {
            dialId: r.dialId,
            contactId: r.contactId,
            campaignId: r.campaignId,
            phone: r.phone,
            maxCallSeconds: r.maxCallSeconds,
            ...(r.agentName && { agentName: r.agentName }),
            ...(r.fromNumber && { fromNumber: r.fromNumber }),
            // When the lead could be dialled (leads asks at once, or when its scheduled time came), for the dial delay.
            ...(occurTime && { requestedAt: occurTime }),
            ...(r.attempt > 0 && { attempt: r.attempt }),
          },
          meta.hold(),
          { topic: meta.topic, partition: meta.partition },
        );
        return;
      }
      case 'contactDeleted': {
        const d = fact.contactDeleted;
        if (!d.tenantId || !d.contactId) throw new Error('ContactDeleted lacks a tenant or contact');
        const scope = scopeOfRecord(d.tenantId);
        await dialer.forgetContact(scope, d.contactId);
        await calls.eraseContact(scope, d.contactId);
        return;
      }
      case 'contactCancelled': {
        const c = fact.contactCancelled;
        if (c.tenantId && c.contactId) await dialer.forgetContact(scopeOfRecord(c.tenantId), c.contactId);
        return;
      }
      default:
        return;
    }
  };
  return subscriber.on(LeadsDialEvent, (event, meta) => act(event.event, event.occurTime, meta));
}

/** Writes the call feed from `telephony.call.feed.v1`, keyed by tenant, so each tenant's feed has one gapless order. */
export function followCallFeed(subscriber: EventSubscriber, feed: CallFeed): EventSubscriber {
  return subscriber.on(TelephonyCallFeedEvent, async (event, meta) => {
    if (event.event?.$case !== 'callChanged') return;
    const c = event.event.callChanged;
    if (!c.tenantId || !c.call || !isCallChange(c.change))
      throw new Error(`CallChanged ${meta.eventId} lacks a tenant, a call or a known change`);
    await feed.record(scopeOfRecord(c.tenantId), {
      id: meta.eventId,
      change: c.change,
      call: c.call as unknown as CallSnapshot,
      at: event.occurTime ?? new Date(),
    });
  });
}
