import { scopeOfRecord, type EventSubscriber } from '@voiceapi/kit';
import { voiceapi } from '@voiceapi/proto';
import { bucketStart } from '../domain/rollup';
import type { CallStore } from '../store/call-store';
import type { RollupStore } from '../store/rollup-store';
import type { Calls } from '../usecases/calls';
import type { Dialer } from '../usecases/dialer';

const { LeadsEvent, BillingEvent } = voiceapi.events.v1;

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

/** Sets each call's billing fields from billing's one outcome per call, and its bucket to recompute. */
export function followBilling(subscriber: EventSubscriber, calls: CallStore, rollups: RollupStore, now: () => Date): EventSubscriber {
  return subscriber.on(BillingEvent, async (event) => {
    if (event.event?.$case !== 'callBilled') return;
    const b = event.event.callBilled;
    const call = await calls.setBilling(b.callId, b.tenantId, {
      billingStatus: b.billingStatus as 'charged' | 'failed' | 'skipped',
      creditsCharged: b.creditsCharged,
      ...(b.creditsError && { creditsError: b.creditsError }),
      ...(b.balanceAfter !== undefined && { balanceAfter: b.balanceAfter }),
    });
    if (call) await rollups.markDirty(scopeOfRecord(call.tenantId), call.direction, bucketStart(call.startedAt), now());
  });
}
