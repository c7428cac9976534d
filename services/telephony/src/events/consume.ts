import { scopeOfRecord, type EventSubscriber } from '@voiceapi/kit';
import { voiceapi } from '@voiceapi/proto';
import { isCallChange, type CallSnapshot } from '../domain/call-feed';
import type { CallStore } from '../store/call-store';
import type { RollupStore } from '../store/rollup-store';
import type { CallFeed } from '../usecases/call-feed';
import type { Calls } from '../usecases/calls';
import type { Dialer } from '../usecases/dialer';
import type { CallEvents } from '../usecases/ports';

const { LeadsEvent, BillingEvent, TelephonyCallFeedEvent } = voiceapi.events.v1;

/**
 * Follows the leads stream: queues every dial request (idempotent by dial id: a redelivery is
 * queued once), drops the waiting dials of a contact cancelled or deleted, and erases the calls'
 * personal data of each deleted contact (idempotent too). All are keyed by contact, so a
 * contact's cancellation or deletion comes after its dial requests.
 */
export function followLeads(subscriber: EventSubscriber, dialer: Dialer, calls: Calls): EventSubscriber {
  return subscriber.on(LeadsEvent, async (event) => {
    switch (event.event?.$case) {
      case 'dialRequested': {
        const r = event.event.dialRequested;
        if (!r.dialId || !r.tenantId || !r.contactId || !r.phone) throw new Error(`DialRequested ${r.dialId} lacks a tenant, contact or phone`);
        await dialer.enqueue(scopeOfRecord(r.tenantId), {
          dialId: r.dialId,
          contactId: r.contactId,
          campaignId: r.campaignId,
          phone: r.phone,
          maxCallSeconds: r.maxCallSeconds,
          ...(r.agentName && { agentName: r.agentName }),
          ...(r.fromNumber && { fromNumber: r.fromNumber }),
          // When the lead could be dialled (leads asks at once, or when its scheduled time came), for the dial delay.
          ...(event.occurTime && { requestedAt: event.occurTime }),
          ...(r.attempt > 0 && { attempt: r.attempt }),
        });
        return;
      }
      case 'contactDeleted': {
        const d = event.event.contactDeleted;
        if (!d.tenantId || !d.contactId) throw new Error('ContactDeleted lacks a tenant or contact');
        const scope = scopeOfRecord(d.tenantId);
        await dialer.forgetContact(scope, d.contactId);
        await calls.eraseContact(scope, d.contactId);
        return;
      }
      case 'contactStatusChanged': {
        const c = event.event.contactStatusChanged;
        if (c.status === 'cancelled' && c.tenantId && c.contactId) await dialer.forgetContact(scopeOfRecord(c.tenantId), c.contactId);
        return;
      }
      default:
        return;
    }
  });
}

/**
 * Sets each call's billing fields from billing's one outcome per call, its bucket to recompute,
 * and announces the change to the call's feed (once: the change's event id is the call's).
 */
export function followBilling(subscriber: EventSubscriber, calls: CallStore, rollups: RollupStore, events: CallEvents, now: () => Date): EventSubscriber {
  return subscriber.on(BillingEvent, async (event) => {
    if (event.event?.$case !== 'callBilled') return;
    const b = event.event.callBilled;
    const call = await calls.setBilling(b.callId, b.tenantId, {
      billingStatus: b.billingStatus as 'charged' | 'failed' | 'skipped',
      creditsCharged: b.creditsCharged,
      ...(b.creditsError && { creditsError: b.creditsError }),
      ...(b.balanceAfter !== undefined && { balanceAfter: b.balanceAfter }),
    });
    if (!call) return;
    await rollups.markDirty(scopeOfRecord(call.tenantId), call.direction, call.startedAt, now());
    await events.changed(call, 'call.billed', now());
  });
}

/**
 * Writes the call feed from its own stream (`telephony.call.feed.v1`, keyed by tenant): the owner
 * of a tenant's partition writes its changes one after the other, in the order they were stored,
 * so each tenant's feed has one order without gaps. A redelivered change is in the feed already.
 */
export function followCallFeed(subscriber: EventSubscriber, feed: CallFeed): EventSubscriber {
  return subscriber.on(TelephonyCallFeedEvent, async (event, meta) => {
    if (event.event?.$case !== 'callChanged') return;
    const c = event.event.callChanged;
    if (!c.tenantId || !c.call || !isCallChange(c.change)) throw new Error(`CallChanged ${meta.eventId} lacks a tenant, a call or a known change`);
    await feed.record(scopeOfRecord(c.tenantId), { id: meta.eventId, change: c.change, call: c.call as unknown as CallSnapshot, at: event.occurTime ?? new Date() });
  });
}
