import { scopeOfRecord } from '@voiceapi/kit';
import { deliveryId, type WebhookMessage } from '../domain/messages';
import type { DeliveryDoc } from '../store/delivery-store';
import type { EndpointStore } from '../store/endpoint-store';

/**
 * From one message to a delivery per subscribed endpoint of its tenant, each handed to the
 * dispatcher for its first attempt; resolves once every delivery is stored (so the event's offset
 * is committed only then). A message fanned out again (Kafka redelivers after a crash, before the
 * offset was committed) makes deliveries of the same ids: those the first pass stored are not sent again.
 */
export class FanOut {
  constructor(
    private readonly d: {
      endpoints: EndpointStore;
      /** The dispatcher's first attempt; resolves once the delivery is stored. */
      first: (delivery: DeliveryDoc) => Promise<void>;
      /** Stores a delivery as it is, no attempt made. */
      insert: (delivery: DeliveryDoc) => Promise<boolean>;
      /** Of these delivery ids, those stored already. */
      stored: (ids: readonly string[]) => Promise<Set<string>>;
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
    // A message fanned out again finds what the first pass stored, and sends nothing twice.
    const stored =
      targets.length === 0 ? new Set() : await this.d.stored(targets.map((e) => deliveryId(e._id, message.id)));
    await Promise.all(
      targets.map(async (endpoint) => {
        if (stored.has(deliveryId(endpoint._id, message.id))) return;
        const now = this.d.now();
        const delivery: DeliveryDoc = {
          _id: deliveryId(endpoint._id, message.id),
          tenantId: scope.tenantId,
          endpointId: endpoint._id,
          messageId: message.id,
          type: message.type,
          body: message.body,
          attempts: 0,
          step: 0,
          status: 'pending',
          createdAt: now,
          updatedAt: now,
        };
        if (endpoint.status === 'disabled')
          await this.d.insert({ ...delivery, status: 'failed', lastError: 'endpoint_disabled' });
        else await this.d.first(delivery);
      }),
    );
    return targets.length;
  }
}
