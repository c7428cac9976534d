import { notFound, OutboundRefused, requireTenant, validationError, type CallContext, type SecretBox } from '@voiceapi/kit';
import { isEventType, WEBHOOK_EVENT_TYPES } from '../domain/messages';
import { newSecret } from '../domain/signing';
import { webhooksReasons } from '../reasons';
import type { DeliveryDoc, DeliveryStatus, DeliveryStore } from '../store/delivery-store';
import { newEndpointId, type EndpointDoc, type EndpointStore } from '../store/endpoint-store';
import type { QueueStore } from '../store/queue-store';

export interface EndpointDeps {
  endpoints: EndpointStore;
  deliveries: DeliveryStore;
  queue: QueueStore;
  /** Seals signing secrets at rest; a secret is bound to its endpoint. */
  secrets: SecretBox;
  /** The outbound client's check of an address's form (the address itself is checked at every delivery). */
  checkUrl: (url: string) => URL;
  /** How long a rotated-out secret keeps signing beside the new one. */
  rotationOverlapMs: number;
  now: () => Date;
}

export interface EndpointView {
  id: string;
  url: string;
  events: string[];
  status: EndpointDoc['status'];
  disabledReason?: EndpointDoc['disabledReason'];
  createdAt: Date;
}

const MAX_URL_LENGTH = 2048;

/** The operator's side of webhooks: register, list, read deliveries, recover, rotate. */
export class Endpoints {
  constructor(private readonly d: EndpointDeps) {}

  async register(ctx: CallContext, url: string, events: readonly string[]): Promise<{ endpoint: EndpointView; secret: string }> {
    const scope = requireTenant(ctx);
    const checked = this.checkUrl(url);
    const unknown = events.filter((e) => !isEventType(e));
    if (unknown.length > 0) {
      throw validationError(`unknown event types: ${unknown.join(', ')}`, unknown.map(() => ({ path: 'events', message: `one of ${WEBHOOK_EVENT_TYPES.join(', ')}` })));
    }
    const now = this.d.now();
    const id = newEndpointId();
    const secret = newSecret();
    const doc = await this.d.endpoints.insert(scope, {
      _id: id,
      url: checked.toString(),
      events: [...new Set(events)],
      status: 'enabled',
      secrets: [{ sealed: this.d.secrets.seal(secret, id), createdAt: now }],
      createdAt: now,
      updatedAt: now,
    });
    return { endpoint: view(doc), secret };
  }

  async list(ctx: CallContext): Promise<EndpointView[]> {
    return (await this.d.endpoints.list(requireTenant(ctx))).map(view);
  }

  async deliveries(endpointId: string, limit: number, status?: string): Promise<DeliveryDoc[]> {
    await this.existing(endpointId);
    if (status !== undefined && !['pending', 'succeeded', 'failed'].includes(status)) throw validationError('status is pending, succeeded or failed', [{ path: 'status', message: 'pending, succeeded or failed' }]);
    return this.d.deliveries.list(endpointId, Math.min(Math.max(limit || 100, 1), 1000), status as DeliveryStatus | undefined);
  }

  /**
   * Sends again every delivery of the window that did not succeed, from the start of the schedule,
   * and enables the endpoint if it was disabled (the operator asks for deliveries to it).
   */
  async recover(endpointId: string, since: Date, until?: Date): Promise<number> {
    const endpoint = await this.existing(endpointId);
    const now = this.d.now();
    const end = until ?? now;
    if (!(since.getTime() < end.getTime())) throw validationError('since must be before until', [{ path: 'since', message: 'before until (or now)' }]);
    if (endpoint.status === 'disabled') await this.d.endpoints.update(endpointId, { status: 'enabled', updatedAt: now }, ['disabledReason', 'failingSince']);
    let queued = 0;
    for (const delivery of await this.d.deliveries.notSucceeded(endpointId, since, end)) {
      await this.d.deliveries.record(delivery._id, { status: 'pending', step: 0, nextAttemptAt: now, updatedAt: now }, null);
      // Pending ones too: the next attempt is now (a replica holding it may also try it: at least once, same id).
      await this.d.queue.enqueue({ deliveryId: delivery._id, endpointId }, now);
      queued++;
    }
    return queued;
  }

  /** A new secret signs from now on; the previous one keeps signing beside it for the overlap. */
  async rotate(endpointId: string): Promise<{ endpoint: EndpointView; secret: string }> {
    const endpoint = await this.existing(endpointId);
    const now = this.d.now();
    const secret = newSecret();
    const retiresAt = new Date(now.getTime() + this.d.rotationOverlapMs);
    // The newest secret before this one stays for the overlap; older ones (already overlapping) go.
    const previous = endpoint.secrets[0] && { ...endpoint.secrets[0], retiresAt };
    const secrets = [{ sealed: this.d.secrets.seal(secret, endpointId), createdAt: now }, ...(previous ? [previous] : [])];
    const updated = await this.d.endpoints.update(endpointId, { secrets, updatedAt: now });
    if (!updated) throw notFound('webhook');
    return { endpoint: view(updated), secret };
  }

  /** The secrets that sign a delivery now, newest first. */
  signingSecrets(endpoint: EndpointDoc, now: Date): string[] {
    return endpoint.secrets.filter((s) => !s.retiresAt || s.retiresAt.getTime() > now.getTime()).map((s) => this.d.secrets.open(s.sealed, endpoint._id));
  }

  private checkUrl(url: string): URL {
    if (url.length > MAX_URL_LENGTH) throw validationError(`url is longer than ${MAX_URL_LENGTH} characters`, [{ path: 'url', message: 'too long' }]);
    try {
      return this.d.checkUrl(url);
    } catch (err) {
      if (err instanceof OutboundRefused) throw webhooksReasons.error('url_not_allowed', `the webhook address is not allowed: ${err.message}`);
      throw err;
    }
  }

  private async existing(endpointId: string): Promise<EndpointDoc> {
    const endpoint = await this.d.endpoints.get(endpointId);
    if (!endpoint) throw notFound('webhook');
    return endpoint;
  }
}

/** Every type when the endpoint subscribed to none in particular. */
export const subscribedTypes = (events: readonly string[]): string[] => (events.length > 0 ? [...events] : [...WEBHOOK_EVENT_TYPES]);

function view(doc: EndpointDoc): EndpointView {
  return { id: doc._id, url: doc.url, events: subscribedTypes(doc.events), status: doc.status, ...(doc.disabledReason && { disabledReason: doc.disabledReason }), createdAt: doc.createdAt };
}
