import { requireTenant, type Logger } from '@voiceapi/kit';
import { deliveryId, type WebhookMessage } from '../domain/messages';
import type { DeliveryStore } from '../store/delivery-store';
import type { EndpointStore } from '../store/endpoint-store';
import type { QueueStore } from '../store/queue-store';

/** Hands a queued delivery to this replica's dispatcher. */
export type LocalDispatch = (item: { deliveryId: string; endpointId: string }) => void;

/**
 * From one message to a delivery per subscribed, enabled endpoint of its tenant. Each delivery is
 * stored, then claimed by this replica, which attempts it at once; both writes are
 * idempotent by the delivery's id, so a message fanned out again (Kafka redelivers after a crash,
 * before the offset was committed) finds what the first pass wrote and adds nothing twice.
 */
export class FanOut {
  constructor(
    private readonly d: { endpoints: EndpointStore; deliveries: DeliveryStore; queue: QueueStore; owner: string; dispatch: LocalDispatch; log: Logger; now: () => Date },
  ) {}

  async publish(message: WebhookMessage): Promise<number> {
    // Endpoints are not per key mode: the scope's mode is only the kit's requirement.
    const scope = requireTenant({ tenantId: message.tenantId, keyMode: 'live' });
    const targets = (await this.d.endpoints.list(scope)).filter((e) => e.status === 'enabled' && (e.events.length === 0 || e.events.includes(message.type)));
    for (const endpoint of targets) {
      const now = this.d.now();
      const id = deliveryId(endpoint._id, message.id);
      const { created, delivery } = await this.d.deliveries.insertOnce(scope, {
        _id: id,
        endpointId: endpoint._id,
        messageId: message.id,
        type: message.type,
        body: message.body,
        status: 'pending',
        attempts: 0,
        step: 0,
        nextAttemptAt: now,
        log: [],
        createdAt: now,
        updatedAt: now,
      });
      // A repeat finds a pending delivery whose queue entry may not have been written (a crash in
      // between); one that already ended is left alone.
      if (!created && delivery.status !== 'pending') continue;
      const item = { deliveryId: id, endpointId: endpoint._id };
      if (created) {
        await this.d.queue.claim(item, this.d.owner);
        this.d.dispatch(item);
      } else {
        await this.d.queue.enqueue(item, now);
      }
    }
    return targets.length;
  }
}
