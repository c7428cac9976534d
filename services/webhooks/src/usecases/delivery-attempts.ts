import { DeadlineCounter, serviceMetrics } from '@voiceapi/kit/metrics';
import { type Logger } from '@voiceapi/kit/service';
import { performance } from 'node:perf_hooks';
import { occurredAtOf } from '../domain/messages';
import { nextAttemptAt, outcomeOf, type AttemptOutcome } from '../domain/retry';
import { signedHeaders } from '../domain/signing';
import type { AttemptRecord } from '../domain/delivery';
import { withAttempt, type DeliveryChange, type DeliveryDoc } from '../store/delivery-store';
import type { DisabledReason, EndpointDoc, EndpointStore } from '../store/endpoint-store';
import type { Sender } from './ports';

export interface DeliveryAttemptsDeps {
  endpoints: EndpointStore;
  /** Before 1.3, bodies were kept in `messages`. */
  legacyBody: (messageId: string) => Promise<string | null>;
  signingSecrets: (endpoint: EndpointDoc, now: Date) => string[];
  sender: Sender;
  log: Logger;
  now: () => Date;
  /** Delay before each attempt, in ms. */
  schedule: readonly number[];
  timeoutMs: number;
  disableAfterMs: number;
}

/** `waiting`: no attempt was made (a paused endpoint, or not due yet). */
export type AttemptResult =
  | { kind: 'ended'; change: DeliveryChange }
  | { kind: 'again'; change: DeliveryChange; nextAttemptAt: Date }
  | { kind: 'waiting'; nextAttemptAt: Date };

/** How long an endpoint read is cached: a pause or deletion waits this long to answer. */
export const ENDPOINT_CACHE_MS = 1_000;
/** A paused endpoint's delivery is looked at again after this; a resume does not wait for it. */
const PAUSED_RECHECK_MS = 10 * 60_000;
/** The billed-webhook SLO's threshold (observability/slos.yaml): a first attempt sent later than this is late. */
export const FIRST_ATTEMPT_DEADLINE_MS = 60_000;
/** Seconds, for the delays from an event: 60 s (the webhook SLO's threshold) is a boundary. */
const DELAY_BUCKETS_S = [0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900];
/** Tolerance for early sends (a replica handing back its retries, a repeated fan-out). */
const EARLY_MS = 50;

/**
 * Whose an attempt's failure was, for the delivery SLO: `platform` when this side could not send (the sender says
 * so: our resolver, no route out, our own error); `endpoint` when the tenant's endpoint answered other than 2xx,
 * refused, was not found or did not answer in time; `none` when delivered.
 */
export type Fault = 'none' | 'endpoint' | 'platform';

export function faultOf(answer: { statusCode: number } | { error: string; ours?: boolean }, delivered: boolean): Fault {
  if (delivered) return 'none';
  return 'error' in answer && answer.ours ? 'platform' : 'endpoint';
}

interface CachedEndpoint {
  doc: EndpointDoc | null;
  secrets: string[];
  readAt: number;
}

/**
 * The rules of one attempt, signed per Standard Webhooks with every current secret. An endpoint failing for
 * `disableAfterMs`, or answering 410, is disabled. When and how many attempts run is the dispatcher's.
 */
export class DeliveryAttempts {
  private readonly cache = new Map<string, CachedEndpoint>();
  private readonly attempts = serviceMetrics('webhooks').counter<{ outcome: string; fault: Fault }>(
    'delivery.attempts',
    {
      description:
        "Delivery attempts by outcome (delivered, failed, gone) and whose failure it was (none, endpoint: the tenant's, platform: ours)",
    },
  );
  private readonly latency = serviceMetrics('webhooks').histogram<{ outcome: string }>('delivery.duration', {
    description: 'Time from sending an attempt to its answer',
    unit: 'ms',
  });
  private readonly delay = serviceMetrics('webhooks').histogram<{ event_type: string }>('delivery.delay', {
    description: "From the event's occurrence to the endpoint answering 2xx, by event type",
    unit: 's',
    buckets: DELAY_BUCKETS_S,
  });
  /** Each event's first attempt to an endpoint sent in time or late, whatever the endpoint answers (the billed-webhook SLO). */
  private readonly firstAttempts = new DeadlineCounter<{ event_type: string }>(
    serviceMetrics('webhooks').counter('delivery.first_attempts', {
      description:
        'First attempts to send an event to an endpoint, each counted once: late "false" sent within 60 s of the event, late "true" counted the moment 60 s pass unsent (sending on time is ours; the endpoint\'s answer is the tenant\'s)',
      unit: '{attempt}',
    }),
    FIRST_ATTEMPT_DEADLINE_MS,
    { initial: [{ event_type: 'call.outbound.billed' }] },
  );

  constructor(private readonly d: DeliveryAttemptsDeps) {
    // The SLO's good and bad series exist from the start: an outage of ours from the first attempt still shows.
    this.attempts.add(0, { outcome: 'delivered', fault: 'none' });
    this.attempts.add(0, { outcome: 'failed', fault: 'platform' });
  }

  async attempt(delivery: DeliveryDoc): Promise<AttemptResult> {
    // A first attempt waits from its event: late once the deadline passes unsent, even while this keeps failing.
    const eventAt = delivery.attempts === 0 && delivery.body !== undefined ? occurredAtOf(delivery.body) : undefined;
    if (eventAt) this.firstAttempts.wait(delivery._id, eventAt, { event_type: delivery.type });
    const result = await this.send(delivery, eventAt);
    // Sent: counted as it went. Not sent (a paused, disabled or deleted endpoint: the tenant's doing): no wait of ours.
    if (eventAt) this.firstAttempts.drop(delivery._id);
    return result;
  }

  private async send(delivery: DeliveryDoc, eventAt: Date | undefined): Promise<AttemptResult> {
    const early = (delivery.nextAttemptAt?.getTime() ?? 0) - this.d.now().getTime();
    if (early > EARLY_MS) return { kind: 'waiting', nextAttemptAt: delivery.nextAttemptAt! };
    let endpoint = await this.endpoint(delivery.endpointId);
    // A cached `disabled` or `paused` may be older than a recovery or a resume: ask the store.
    if (endpoint.doc && endpoint.doc.status !== 'enabled') endpoint = await this.endpoint(delivery.endpointId, true);
    if (!endpoint.doc || endpoint.doc.status === 'disabled' || endpoint.doc.status === 'deleted') {
      const lastError = endpoint.doc?.status === 'disabled' ? 'endpoint_disabled' : 'endpoint_deleted';
      return { kind: 'ended', change: this.ended('failed', { lastError }) };
    }
    // A resume makes it due at once; this later look covers a resume that raced it.
    if (endpoint.doc.status === 'paused')
      return { kind: 'waiting', nextAttemptAt: new Date(this.d.now().getTime() + PAUSED_RECHECK_MS) };
    const body = delivery.body ?? (await this.d.legacyBody(delivery.messageId));
    if (body === null) throw new Error(`message ${delivery.messageId} of delivery ${delivery._id} is missing`);
    const at = this.d.now();
    const headers = {
      'content-type': 'application/json',
      'user-agent': 'voiceapi-webhooks/1',
      ...signedHeaders(delivery.messageId, at, body, endpoint.secrets),
    };
    if (eventAt) this.firstAttempts.done(delivery._id, eventAt, at, { event_type: delivery.type });
    const started = performance.now();
    const answer = await this.d.sender.post(endpoint.doc.url, headers, body, this.d.timeoutMs);
    const durationMs = Math.round(performance.now() - started);
    const now = this.d.now();
    const outcome = outcomeOf(answer, now);
    this.attempts.add(1, { outcome: outcome.kind, fault: faultOf(answer, outcome.kind === 'delivered') });
    this.latency.record(durationMs, { outcome: outcome.kind });
    const occurredAt = eventAt ?? occurredAtOf(body);
    if (outcome.kind === 'delivered' && occurredAt)
      this.delay.record(Math.max(0, now.getTime() - occurredAt.getTime()) / 1000, { event_type: delivery.type });
    const record: AttemptRecord = {
      at,
      durationMs,
      ...('statusCode' in answer ? { statusCode: answer.statusCode } : { error: answer.error }),
    };
    const progress = {
      attempts: delivery.attempts + 1,
      step: delivery.step + 1,
      attemptLog: withAttempt(delivery.attemptLog, record),
      ...(delivery.body === undefined && { body }), // a pre-1.3 delivery carries its body from now on
      ...lastOf(outcome),
    };

    if (outcome.kind === 'delivered') {
      await this.noteSuccess(endpoint.doc);
      return { kind: 'ended', change: this.ended('succeeded', progress) };
    }
    if (outcome.kind === 'gone') {
      await this.disable(endpoint.doc, 'gone');
      return { kind: 'ended', change: this.ended('failed', progress) };
    }
    const disabled = await this.noteFailure(endpoint.doc, now);
    const next = disabled ? null : nextAttemptAt(this.d.schedule, progress.step, now, outcome.retryAfterMs);
    if (!next) return { kind: 'ended', change: this.ended('failed', progress) };
    return {
      kind: 'again',
      nextAttemptAt: next,
      change: {
        set: { ...progress, nextAttemptAt: next, updatedAt: now },
        unset: 'lastStatusCode' in progress ? ['lastError'] : ['lastStatusCode'],
      },
    };
  }

  private ended(status: 'succeeded' | 'failed', fields: Partial<DeliveryDoc>): DeliveryChange {
    const unset: (keyof DeliveryDoc)[] = [
      'nextAttemptAt',
      ...(fields.lastStatusCode !== undefined
        ? (['lastError'] as const)
        : fields.lastError !== undefined
          ? (['lastStatusCode'] as const)
          : []),
    ];
    return { set: { ...fields, status, updatedAt: this.d.now() }, unset };
  }

  private async endpoint(id: string, fresh = false): Promise<CachedEndpoint> {
    const cached = this.cache.get(id);
    const now = this.d.now();
    if (!fresh && cached && now.getTime() - cached.readAt < ENDPOINT_CACHE_MS) return cached;
    const doc = await this.d.endpoints.get(id);
    const read = { doc, secrets: doc ? this.d.signingSecrets(doc, now) : [], readAt: now.getTime() };
    this.cache.set(id, read);
    return read;
  }

  /** The first failure after a success starts the clock; true when it disabled the endpoint. */
  private async noteFailure(endpoint: EndpointDoc, now: Date): Promise<boolean> {
    if (!endpoint.failingSince) {
      endpoint.failingSince = now;
      await this.d.endpoints.update(endpoint._id, { failingSince: now }, [], { failingSince: null });
      return false;
    }
    if (now.getTime() - endpoint.failingSince.getTime() < this.d.disableAfterMs) return false;
    await this.disable(endpoint, 'failing');
    return true;
  }

  private async noteSuccess(endpoint: EndpointDoc): Promise<void> {
    if (!endpoint.failingSince) return;
    delete endpoint.failingSince;
    await this.d.endpoints.update(endpoint._id, {}, ['failingSince']);
  }

  private async disable(endpoint: EndpointDoc, reason: DisabledReason): Promise<void> {
    endpoint.status = 'disabled';
    endpoint.disabledReason = reason;
    await this.d.endpoints.update(
      endpoint._id,
      { status: 'disabled', disabledReason: reason, updatedAt: this.d.now() },
      [],
      { status: 'enabled' },
    );
    this.d.log.warn({ endpointId: endpoint._id, tenantId: endpoint.tenantId, reason }, 'webhook endpoint disabled');
  }
}

function lastOf(outcome: AttemptOutcome): { lastStatusCode: number } | { lastError: string } {
  if (outcome.statusCode !== undefined) return { lastStatusCode: outcome.statusCode };
  return { lastError: outcome.kind === 'failed' ? (outcome.error ?? 'network') : 'network' };
}
