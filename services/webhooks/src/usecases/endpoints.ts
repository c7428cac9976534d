import { type SecretBox } from '@voiceapi/kit/crypto';
import { notFound, validationError } from '@voiceapi/kit/errors';
import { type TenantScope } from '@voiceapi/kit/grpc';
import { OutboundRefused } from '@voiceapi/kit/http';
import { isEventType, WEBHOOK_EVENT_TYPES } from '../domain/messages';
import { newSecret } from '../domain/signing';
import { webhooksReasons } from '../reasons';
import type { DeliveryStatus } from '../domain/delivery';
import type { DeliveryDoc, DeliveryStore } from '../store/delivery-store';
import { newEndpointId, type EndpointDoc, type EndpointStore } from '../store/endpoint-store';

export interface EndpointDeps {
  endpoints: EndpointStore;
  deliveries: DeliveryStore;
  /** Pending deliveries fell due (a resume, a recovery): the dispatcher looks now. */
  wake: () => void;
  /** Seals signing secrets at rest; a secret is bound to its endpoint. */
  secrets: SecretBox;
  /** Checks the address's form only; the address itself is checked at every delivery. */
  checkUrl: (url: string) => URL;
  rotationOverlapMs: number;
  /** A dispatcher's cache age: pauses and deletions answer after it, so no attempt follows the answer. */
  settleMs: number;
  now: () => Date;
}

export interface EndpointChange {
  url?: string;
  /** Replaces the subscribed types (empty: every type). */
  events?: readonly string[];
  enabled?: boolean;
}

/** A deleted endpoint's delivery log stays readable this long. */
export const DELETED_LOG_DAYS = 30;

export interface EndpointView {
  id: string;
  url: string;
  events: string[];
  status: EndpointDoc['status'];
  disabledReason?: EndpointDoc['disabledReason'];
  createdAt: Date;
}

const MAX_URL_LENGTH = 2048;

/** The operator's side of webhooks. */
export class Endpoints {
  constructor(private readonly d: EndpointDeps) {}

  async register(
    scope: TenantScope,
    url: string,
    events: readonly string[],
  ): Promise<{ endpoint: EndpointView; secret: string }> {
    const checked = this.checkUrl(url);
    checkEvents(events);
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

  async list(scope: TenantScope): Promise<EndpointView[]> {
    return (await this.d.endpoints.list(scope)).filter((e) => e.status !== 'deleted').map(view);
  }

  /** Event types some endpoint would get, picked as `FanOut.publish` does (paused and disabled included). */
  async receivedTypes(scope: TenantScope): Promise<string[]> {
    const endpoints = (await this.d.endpoints.list(scope)).filter((e) => e.status !== 'deleted');
    return [...new Set(endpoints.flatMap((e) => subscribedTypes(e.events)))].sort();
  }

  /** Changes the address or events, pauses or resumes; resuming sends what waited, oldest first. */
  async update(endpointId: string, change: EndpointChange): Promise<EndpointView> {
    const endpoint = await this.existing(endpointId);
    const now = this.d.now();
    const set: Partial<EndpointDoc> = { updatedAt: now };
    const unset: (keyof EndpointDoc)[] = [];
    if (change.url !== undefined) set.url = this.checkUrl(change.url).toString();
    if (change.events !== undefined) {
      checkEvents(change.events);
      set.events = [...new Set(change.events)];
    }
    const resuming = change.enabled === true && endpoint.status !== 'enabled';
    if (change.enabled === false) set.status = 'paused';
    if (resuming) {
      set.status = 'enabled';
      unset.push('disabledReason', 'failingSince');
    }
    // Never brings a deleted endpoint back: one deleted meanwhile is not found.
    const updated = await this.d.endpoints.update(endpointId, set, unset, { status: { $ne: 'deleted' } });
    if (!updated) throw notFound('webhook');
    // Answered once no dispatcher sends on the old address or the unpaused state.
    if (
      (change.url !== undefined && set.url !== endpoint.url) ||
      (change.enabled === false && endpoint.status !== 'paused')
    )
      await this.settle();
    if (resuming) {
      for await (const page of this.d.deliveries.pending(endpointId))
        await this.d.deliveries.dueAt(page.map((delivery) => ({ delivery, at: delivery.createdAt })));
      this.d.wake();
    }
    return view(updated);
  }

  /** Stops deliveries (answered once no dispatcher can act on it); its log stays readable. */
  async remove(endpointId: string): Promise<void> {
    await this.existing(endpointId);
    const now = this.d.now();
    const deleted = await this.d.endpoints.update(
      endpointId,
      { status: 'deleted', deletedAt: now, updatedAt: now },
      ['disabledReason', 'failingSince'],
      { status: { $ne: 'deleted' } },
    );
    if (!deleted) throw notFound('webhook');
    await this.settle();
  }

  async deliveries(endpointId: string, limit: number, status?: string): Promise<DeliveryDoc[]> {
    await this.existing(endpointId, { deletedFor: DELETED_LOG_DAYS * 86_400_000 });
    if (status !== undefined && !['pending', 'succeeded', 'failed'].includes(status))
      throw validationError('status is pending, succeeded or failed', [
        { path: 'status', message: 'pending, succeeded or failed' },
      ]);
    return this.d.deliveries.list(
      endpointId,
      Math.min(Math.max(limit || 100, 1), 1000),
      status as DeliveryStatus | undefined,
    );
  }

  /** Restarts the window's unsucceeded deliveries, enabling a disabled endpoint (the operator asks for them). */
  async recover(endpointId: string, since: Date, until?: Date): Promise<number> {
    const endpoint = await this.existing(endpointId);
    const now = this.d.now();
    const end = until ?? now;
    if (!(since.getTime() < end.getTime()))
      throw validationError('since must be before until', [{ path: 'since', message: 'before until (or now)' }]);
    if (endpoint.status === 'disabled')
      await this.d.endpoints.update(endpointId, { status: 'enabled', updatedAt: now }, [
        'disabledReason',
        'failingSince',
      ]);
    let queued = 0;
    for (const delivery of await this.d.deliveries.notSucceeded(endpointId, since, end)) {
      // Pending ones too; a replica holding one may also try it (at least once, same id).
      await this.d.deliveries.restart(delivery, now);
      queued++;
    }
    this.d.wake();
    return queued;
  }

  async rotate(endpointId: string): Promise<{ endpoint: EndpointView; secret: string }> {
    const endpoint = await this.existing(endpointId);
    const now = this.d.now();
    const secret = newSecret();
    const retiresAt = new Date(now.getTime() + this.d.rotationOverlapMs);
    // Only the newest previous secret overlaps; older ones go.
    const previous = endpoint.secrets[0] && { ...endpoint.secrets[0], retiresAt };
    const secrets = [
      { sealed: this.d.secrets.seal(secret, endpointId), createdAt: now },
      ...(previous ? [previous] : []),
    ];
    const updated = await this.d.endpoints.update(endpointId, { secrets, updatedAt: now });
    if (!updated) throw notFound('webhook');
    return { endpoint: view(updated), secret };
  }

  /**
   * Key rotation (docs/operations.md): reseals secrets with the current WEBHOOK_SECRETS_KEY; an endpoint changed
   * meanwhile waits for the next pass. `unreadable`: sealed by no key of the ring.
   */
  async resealSecrets(): Promise<{ moved: number; unreadable: number }> {
    let moved = 0;
    let unreadable = 0;
    for await (const page of this.d.endpoints.all()) {
      for (const endpoint of page) {
        if (endpoint.secrets.every((s) => this.d.secrets.isCurrent(s.sealed))) continue;
        try {
          const secrets = endpoint.secrets.map((s) =>
            this.d.secrets.isCurrent(s.sealed) ? s : { ...s, sealed: this.d.secrets.reseal(s.sealed, endpoint._id) },
          );
          if (await this.d.endpoints.update(endpoint._id, { secrets }, [], { updatedAt: endpoint.updatedAt })) moved++;
        } catch {
          unreadable++;
        }
      }
    }
    return { moved, unreadable };
  }

  /** The secrets that sign a delivery now, newest first. */
  signingSecrets(endpoint: EndpointDoc, now: Date): string[] {
    return endpoint.secrets
      .filter((s) => !s.retiresAt || s.retiresAt.getTime() > now.getTime())
      .map((s) => this.d.secrets.open(s.sealed, endpoint._id));
  }

  private checkUrl(url: string): URL {
    if (url.length > MAX_URL_LENGTH)
      throw validationError(`url is longer than ${MAX_URL_LENGTH} characters`, [{ path: 'url', message: 'too long' }]);
    try {
      return this.d.checkUrl(url);
    } catch (err) {
      if (err instanceof OutboundRefused)
        throw webhooksReasons.error('url_not_allowed', `the webhook address is not allowed: ${err.message}`);
      throw err;
    }
  }

  /** A deleted endpoint is found only within `deletedFor` of its deletion (its log). */
  private async existing(endpointId: string, opts: { deletedFor?: number } = {}): Promise<EndpointDoc> {
    const endpoint = await this.d.endpoints.get(endpointId);
    if (!endpoint) throw notFound('webhook');
    if (
      endpoint.status === 'deleted' &&
      !(
        opts.deletedFor &&
        endpoint.deletedAt &&
        this.d.now().getTime() - endpoint.deletedAt.getTime() < opts.deletedFor
      )
    )
      throw notFound('webhook');
    return endpoint;
  }

  private settle(): Promise<void> {
    return new Promise((resolve) => setTimeout(resolve, this.d.settleMs));
  }
}

function checkEvents(events: readonly string[]): void {
  const unknown = events.filter((e) => !isEventType(e));
  if (unknown.length > 0) {
    throw validationError(
      `unknown event types: ${unknown.join(', ')}`,
      unknown.map(() => ({ path: 'events', message: `one of ${WEBHOOK_EVENT_TYPES.join(', ')}` })),
    );
  }
}

/** Every type when the endpoint subscribed to none in particular. */
export const subscribedTypes = (events: readonly string[]): string[] =>
  events.length > 0 ? [...events] : [...WEBHOOK_EVENT_TYPES];

function view(doc: EndpointDoc): EndpointView {
  return {
    id: doc._id,
    url: doc.url,
    events: subscribedTypes(doc.events),
    status: doc.status,
    ...(doc.disabledReason && { disabledReason: doc.disabledReason }),
    createdAt: doc.createdAt,
  };
}
