import type { EventSubscriber } from '@voiceapi/kit';
import { voiceapi } from '@voiceapi/proto';
import { bucketStart } from '../domain/rollup';
import type { CallStore } from '../store/call-store';
import type { RollupStore } from '../store/rollup-store';
import type { Dialer } from '../usecases/dialer';

const { LeadsEvent, BillingEvent } = voiceapi.events.v1;

/** Queues every dial request leads publishes (idempotent by dial id: a redelivery is queued once). */
export function queueDialRequests(subscriber: EventSubscriber, dialer: Dialer): EventSubscriber {
  return subscriber.on(LeadsEvent, async (event) => {
    if (event.event?.$case !== 'dialRequested') return;
    const r = event.event.dialRequested;
    if (!r.dialId || !r.tenantId || !r.contactId || !r.phone) throw new Error(`DialRequested ${r.dialId} lacks a tenant, contact or phone`);
    await dialer.enqueue({
      dialId: r.dialId,
      tenantId: r.tenantId,
      contactId: r.contactId,
      campaignId: r.campaignId,
      phone: r.phone,
      maxCallSeconds: r.maxCallSeconds,
      ...(r.agentName && { agentName: r.agentName }),
    });
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
    if (call) await rollups.markDirty(call.tenantId, call.direction, bucketStart(call.startedAt), now());
  });
}
