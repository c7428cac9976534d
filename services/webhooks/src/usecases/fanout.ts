import { scopeOfRecord, type Logger } from '@voiceapi/kit';
import { deliveryId, type WebhookMessage } from '../domain/messages';
import type { DeliveryStore } from '../store/delivery-store';
import type { EndpointStore } from '../store/endpoint-store';
import type { MessageStore } from '../store/message-store';
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
    private readonly d: {
      endpoints: EndpointStore;
      messages: MessageStore;
      deliveries: DeliveryStore;
      queue: QueueStore;
      owner: string;
      dispatch: LocalDispatch;
      log: Logger;
      now: () => Date;
    },
  ) {}

  async publish(message: WebhookMessage): Promise<number> {
    // Endpoints are not per key mode: the scope's mode is only the kit's requirement.
    const scope = scopeOfRecord(message.tenantId);
    // A disabled endpoint gets the delivery too, failed at once (`endpoint_disabled`): nothing is
    // sent, and a recovery of the window sends it once the endpoint is enabled again. A paused one
    // gets it pending: it waits for the endpoint to resume. A deleted one gets nothing.
    const targets = (await this.d.endpoints.list(scope)).filter(
      (e) => e.status !== 'deleted' && (e.events.length === 0 || e.events.includes(message.type)),
    );
    if (targets.length > 0) await this.d.messages.insertOnce(scope, message, this.d.now());
    for (const endpoint of targets) {
      const now = this.d.now();
      const id = deliveryId(endpoint._id, message.id);
      const disabled = endpoint.status === 'disabled';
      const { delivery } = await this.d.deliveries.insertOnce(scope, {
        _id: id,
        endpointId: endpoint._id,
        messageId: message.id,
        type: message.type,
        attempts: 0,
        step: 0,
        ...(disabled
          ? { status: 'failed' as const, lastError: 'endpoint_disabled' }
          : { status: 'pending' as const, nextAttemptAt: now }),
        createdAt: now,
        updatedAt: now,
      });
      // A repeat finds a pending delivery whose claim may not have been written (a crash in
      // between); one that ended (or was made failed for a disabled endpoint) is left alone, and
      // so is one another replica holds.
      if (delivery.status !== 'pending') continue;
      const item = { deliveryId: id, endpointId: endpoint._id };
      // The attempt waits for the delivery's next attempt time, so a repeat never sends early.
      if (await this.d.queue.claim(item, this.d.owner)) this.d.dispatch(item);
    }
    return targets.length;
  }
}
