import { scopeOfRecord } from '@voiceapi/kit/grpc';
import { deliveryId, type WebhookMessage } from '../domain/messages';
import type { DeliveryDoc } from '../store/delivery-store';
import type { EndpointStore } from '../store/endpoint-store';

/**
 * One delivery per subscribed endpoint; resolves once all are stored, so the offset commits only then.
 * A redelivered message makes the same delivery ids, so nothing stored is sent twice.
 */
export class FanOut {
  constructor(
    private readonly d: {
      endpoints: EndpointStore;
      first: (delivery: DeliveryDoc) => Promise<void>;
      insert: (delivery: DeliveryDoc) => Promise<boolean>;
      stored: (ids: readonly string[]) => Promise<Set<string>>;
      now: () => Date;
    },
  ) {}

  async publish(message: WebhookMessage): Promise<number> {
    // Endpoints are not per key mode; the kit just needs a scope.
    const scope = scopeOfRecord(message.tenantId);
    // A disabled endpoint gets it failed (a recovery can send it later); a paused one pending; a deleted none.
    const targets = (await this.d.endpoints.list(scope)).filter(
      (e) => e.status !== 'deleted' && (e.events.length === 0 || e.events.includes(message.type)),
    );
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
