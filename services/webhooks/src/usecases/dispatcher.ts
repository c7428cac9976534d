import { serviceMetrics, type Lease, type Logger } from '@voiceapi/kit';
import { performance } from 'node:perf_hooks';
import { nextAttemptAt, outcomeOf, type AttemptOutcome } from '../domain/retry';
import { signedHeaders } from '../domain/signing';
import type { AttemptRecord, DeliveryDoc, DeliveryStore } from '../store/delivery-store';
import type { DisabledReason, EndpointDoc, EndpointStore } from '../store/endpoint-store';
import type { MessageStore } from '../store/message-store';
import type { QueueStore } from '../store/queue-store';

/** Where a signed delivery goes out (the kit's OutboundClient in production): an answer or why there was none. */
export interface Sender {
  post(url: string, headers: Record<string, string>, body: string, timeoutMs: number): Promise<{ statusCode: number; retryAfter?: string } | { error: string }>;
}

export interface DispatcherDeps {
  deliveries: DeliveryStore;
  messages: MessageStore;
  queue: QueueStore;
  endpoints: EndpointStore;
  /** The secrets that sign for an endpoint now, newest first. */
  signingSecrets: (endpoint: EndpointDoc, now: Date) => string[];
  sender: Sender;
  /** One replica at a time hands out due deliveries nobody holds. */
  sweepLease: Lease;
  /** This replica. */
  owner: string;
  log: Logger;
  now: () => Date;
  /** Delay before each attempt, in ms. */
  schedule: readonly number[];
  timeoutMs: number;
  /** An endpoint with no success for this long is disabled. */
  disableAfterMs: number;
  /** Attempts in flight to one endpoint: a slow endpoint holds this many, and no more. */
  perEndpoint: number;
  /** Attempts in flight in all. */
  maxInFlight: number;
  /** A retry due within this long stays in memory; a later one goes back to the queue for the sweeper. */
  holdMs: number;
  sweepIntervalMs: number;
  /** This replica says it is alive this often; a replica silent for `aliveMs` is presumed dead. */
  heartbeatMs: number;
  aliveMs: number;
}

/** How long an endpoint read is used: a pause or deletion waits this long before it answers. */
export const ENDPOINT_CACHE_MS = 1_000;
/** A delivery to a paused endpoint is looked at again after this (a resume does not wait for it). */
const PAUSED_RECHECK_MS = 10 * 60_000;
const RETRY_AFTER_STORE_ERROR_MS = 1_000;
/** The sweeper stops handing out work while this replica holds this many deliveries. */
const MAX_HELD = 50_000;
const SWEEP_BATCH = 500;
const STOP_WAIT_MS = 2_000;
/** Ended deliveries leave the claims and the queue together, this often: one delete for many. */
const FORGET_EVERY_MS = 2_000;
const BODY_CACHE = 1_000;

interface CachedEndpoint {
  doc: EndpointDoc | null;
  secrets: string[];
  readAt: number;
}

/**
 * Sends deliveries, each endpoint on its own: attempts to one endpoint never take more than
 * `perEndpoint` of the `maxInFlight` slots, and endpoints take turns, so a slow or dead endpoint
 * (15 s timeouts, a backlog of 10,000) delays only itself.
 *
 * What this replica holds is in memory and claimed in the store; a retry due soon waits here on a
 * timer, a later one goes back to the queue. The sweeper (one replica, under a lease) takes what
 * comes due in the queue, and gives back to the queue what a replica that stopped saying it is
 * alive had claimed. Delivery is at least once: a crash between sending and recording sends the
 * same message again, with the same `webhook-id` and body.
 */
export class Dispatcher {
  private readonly waiting = new Map<string, string[]>();
  private readonly active = new Map<string, number>();
  private readonly held = new Set<string>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly running = new Set<Promise<void>>();
  private readonly cache = new Map<string, CachedEndpoint>();
  private inFlight = 0;
  /** Ended deliveries whose claim (or queue entry) is still to be deleted. */
  private ended: string[] = [];
  private forgetting: Promise<void> | undefined;
  /** Recent message bodies (a message often goes to several endpoints, and retries resend it). */
  private readonly bodies = new Map<string, string>();
  private stopped = true;
  private loops: NodeJS.Timeout[] = [];
  private sweeping: Promise<void> | undefined;
  private readonly attempts = serviceMetrics('webhooks').counter<{ outcome: string }>('delivery.attempts', { description: 'Delivery attempts by outcome: delivered, failed, gone' });
  private readonly latency = serviceMetrics('webhooks').histogram<{ outcome: string }>('delivery.duration', { description: 'Time from sending an attempt to its answer', unit: 'ms' });

  constructor(private readonly d: DispatcherDeps) {}

  async start(): Promise<void> {
    // What an earlier life of this replica held is nobody's now: the sweeper hands it out again.
    const released = await this.d.queue.releaseAll(this.d.owner, this.d.now());
    if (released > 0) this.d.log.info({ released }, 'deliveries held before a restart handed back');
    await this.heartbeat();
    this.stopped = false;
    this.loops = [
      setInterval(() => void this.heartbeat(), this.d.heartbeatMs),
      setInterval(() => void this.sweep(), this.d.sweepIntervalMs),
      setInterval(() => void this.forget(), FORGET_EVERY_MS),
    ];
    this.loops.forEach((t) => t.unref());
    void this.sweep();
  }

  /** Stops taking work, waits for attempts in flight, and hands back what it held. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.loops.forEach(clearInterval);
    this.timers.forEach(clearTimeout);
    this.timers.clear();
    this.waiting.clear();
    await this.sweeping;
    // Attempts in flight get a moment to finish; one that does not is sent again by whoever takes
    // the delivery over (at least once, same id), rather than holding up the shutdown for 15 s.
    await Promise.race([Promise.allSettled([...this.running]), new Promise((r) => setTimeout(r, STOP_WAIT_MS).unref())]);
    this.held.clear();
    await this.forget();
    await this.d.queue.releaseAll(this.d.owner, this.d.now());
    await this.d.queue.retire(this.d.owner);
    await this.d.sweepLease.release();
  }

  /** A delivery this replica now holds (marked as its own in the queue). */
  enqueue(item: { deliveryId: string; endpointId: string }): void {
    if (this.stopped || this.held.has(item.deliveryId)) return;
    this.held.add(item.deliveryId);
    const list = this.waiting.get(item.endpointId);
    if (list) list.push(item.deliveryId);
    else this.waiting.set(item.endpointId, [item.deliveryId]);
    this.pump();
  }

  /** Deliveries held in memory (waiting, in flight, or on a retry timer). */
  get holding(): number {
    return this.held.size;
  }

  private pump(): void {
    let progressed = true;
    while (!this.stopped && progressed && this.inFlight < this.d.maxInFlight) {
      progressed = false;
      // One per endpoint per pass: endpoints take turns for the shared slots.
      for (const [endpointId, list] of this.waiting) {
        if (this.inFlight >= this.d.maxInFlight) break;
        if ((this.active.get(endpointId) ?? 0) >= this.d.perEndpoint) continue;
        const deliveryId = list.shift()!;
        if (list.length === 0) this.waiting.delete(endpointId);
        this.launch(endpointId, deliveryId);
        progressed = true;
      }
    }
  }

  private launch(endpointId: string, deliveryId: string): void {
    this.inFlight++;
    this.active.set(endpointId, (this.active.get(endpointId) ?? 0) + 1);
    const run = this.attempt(endpointId, deliveryId)
      .then(
        (keep) => {
          if (!keep) this.held.delete(deliveryId);
        },
        (err: unknown) => {
          // The store failed (the attempt may have gone out): try again shortly; it is still ours.
          this.d.log.warn({ err, deliveryId }, 'delivery attempt could not be recorded; trying again');
          this.later(endpointId, deliveryId, RETRY_AFTER_STORE_ERROR_MS);
        },
      )
      .finally(() => {
        this.inFlight--;
        const n = (this.active.get(endpointId) ?? 1) - 1;
        if (n === 0) this.active.delete(endpointId);
        else this.active.set(endpointId, n);
        this.running.delete(run);
        this.pump();
      });
    this.running.add(run);
  }

  /** One attempt; true while the delivery stays in memory (a retry on a timer). */
  private async attempt(endpointId: string, deliveryId: string): Promise<boolean> {
    const delivery = await this.d.deliveries.get(deliveryId);
    if (!delivery || delivery.status !== 'pending') {
      this.ended.push(deliveryId);
      return false;
    }
    // Not before its time (a replica handing back its retries, a repeated fan-out, a store error).
    const early = (delivery.nextAttemptAt?.getTime() ?? 0) - this.d.now().getTime();
    if (early > 50) return this.wait(endpointId, deliveryId, early);
    let endpoint = await this.endpoint(endpointId);
    // A cached `disabled` or `paused` may be older than a recovery or a resume: ask the store.
    if (endpoint.doc && endpoint.doc.status !== 'enabled') endpoint = await this.endpoint(endpointId, true);
    if (!endpoint.doc || endpoint.doc.status === 'disabled' || endpoint.doc.status === 'deleted') {
      await this.end(delivery, 'failed', { lastError: endpoint.doc?.status === 'disabled' ? 'endpoint_disabled' : 'endpoint_deleted' }, null);
      return false;
    }
    if (endpoint.doc.status === 'paused') {
      // It waits; a resume makes it due again at once. This later look covers a resume that
      // raced this release.
      await this.d.queue.release({ deliveryId, endpointId }, new Date(this.d.now().getTime() + PAUSED_RECHECK_MS));
      return false;
    }
    const body = await this.body(delivery.messageId);
    if (body === null) throw new Error(`message ${delivery.messageId} of delivery ${deliveryId} is missing`);
    const at = this.d.now();
    const headers = { 'content-type': 'application/json', 'user-agent': 'voiceapi-webhooks/1', ...signedHeaders(delivery.messageId, at, body, endpoint.secrets) };
    const started = performance.now();
    const answer = await this.d.sender.post(endpoint.doc.url, headers, body, this.d.timeoutMs);
    const durationMs = Math.round(performance.now() - started);
    const now = this.d.now();
    const outcome = outcomeOf(answer, now);
    this.attempts.add(1, { outcome: outcome.kind });
    this.latency.record(durationMs, { outcome: outcome.kind });
    const record: AttemptRecord = { at, durationMs, ...('statusCode' in answer ? { statusCode: answer.statusCode } : { error: answer.error }) };
    const progress = { attempts: delivery.attempts + 1, step: delivery.step + 1 };
    const last = lastOf(outcome);

    if (outcome.kind === 'delivered') {
      await this.end(delivery, 'succeeded', { ...progress, ...last }, record);
      await this.noteSuccess(endpoint.doc);
      return false;
    }
    if (outcome.kind === 'gone') {
      await this.disable(endpoint.doc, 'gone');
      await this.end(delivery, 'failed', { ...progress, ...last }, record);
      return false;
    }
    const disabled = await this.noteFailure(endpoint.doc, now);
    const next = disabled ? null : nextAttemptAt(this.d.schedule, progress.step, now, outcome.retryAfterMs);
    if (!next) {
      await this.end(delivery, 'failed', { ...progress, ...last }, record);
      return false;
    }
    await this.d.deliveries.record(delivery._id, { ...progress, ...last, nextAttemptAt: next, updatedAt: now }, record, 'lastStatusCode' in last ? ['lastError'] : ['lastStatusCode']);
    return this.wait(endpointId, deliveryId, next.getTime() - now.getTime());
  }

  /** A retry due soon waits in memory (still claimed); a later one goes back to the queue. True while held. */
  private async wait(endpointId: string, deliveryId: string, ms: number): Promise<boolean> {
    if (ms <= this.d.holdMs && !this.stopped) {
      this.later(endpointId, deliveryId, ms);
      return true;
    }
    await this.d.queue.release({ deliveryId, endpointId }, new Date(this.d.now().getTime() + ms));
    return false;
  }

  /** The delivery ends (succeeded, or failed for good); its claim goes with the next batch. */
  private async end(delivery: DeliveryDoc, status: 'succeeded' | 'failed', fields: Partial<DeliveryDoc>, record: AttemptRecord | null): Promise<void> {
    const unset: (keyof DeliveryDoc)[] = ['nextAttemptAt', ...(fields.lastStatusCode !== undefined ? (['lastError'] as const) : fields.lastError !== undefined ? (['lastStatusCode'] as const) : [])];
    await this.d.deliveries.record(delivery._id, { ...fields, status, updatedAt: this.d.now() }, record, unset);
    this.ended.push(delivery._id);
  }

  /**
   * Deletes the claims (and queue entries) of ended deliveries, many at once. A crash before it
   * leaves them claimed: whoever takes them over reads the delivery first and finds it ended.
   */
  private forget(): Promise<void> {
    if (this.ended.length === 0) return this.forgetting ?? Promise.resolve();
    this.forgetting ??= (async () => {
      while (this.ended.length > 0) {
        const batch = this.ended.splice(0, 1_000);
        try {
          await this.d.queue.unclaimMany(batch);
        } catch (err) {
          this.ended.push(...batch);
          this.d.log.warn({ err }, 'ended deliveries could not be unclaimed yet');
          return;
        }
      }
    })().finally(() => (this.forgetting = undefined));
    return this.forgetting;
  }

  private async body(messageId: string): Promise<string | null> {
    const cached = this.bodies.get(messageId);
    if (cached !== undefined) return cached;
    const body = await this.d.messages.body(messageId);
    if (body !== null) {
      if (this.bodies.size >= BODY_CACHE) this.bodies.delete(this.bodies.keys().next().value!);
      this.bodies.set(messageId, body);
    }
    return body;
  }

  private later(endpointId: string, deliveryId: string, ms: number): void {
    if (this.stopped) return;
    const timer = setTimeout(() => {
      this.timers.delete(deliveryId);
      this.held.delete(deliveryId);
      this.enqueue({ deliveryId, endpointId });
    }, ms);
    timer.unref();
    this.timers.set(deliveryId, timer);
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

  /** The first failure after a success starts the clock; past the limit the endpoint is disabled. True when disabled. */
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
    await this.d.endpoints.update(endpoint._id, { status: 'disabled', disabledReason: reason, updatedAt: this.d.now() }, [], { status: 'enabled' });
    this.d.log.warn({ endpointId: endpoint._id, tenantId: endpoint.tenantId, reason }, 'webhook endpoint disabled');
  }

  private async heartbeat(): Promise<void> {
    try {
      await this.d.queue.heartbeat(this.d.owner, new Date(this.d.now().getTime() + this.d.aliveMs));
    } catch (err) {
      this.d.log.warn({ err }, 'dispatcher heartbeat failed');
    }
  }

  /** The lease holder gives dead replicas' claims back to the queue, then takes what is due. */
  private sweep(): Promise<void> {
    this.sweeping ??= (async () => {
      if (this.stopped || !(await this.d.sweepLease.acquire())) return;
      const now = this.d.now();
      for (const dead of await this.d.queue.deadOwners(now)) {
        if (dead === this.d.owner) continue;
        const released = await this.d.queue.releaseAll(dead, now);
        await this.d.queue.retire(dead);
        if (released > 0) this.d.log.info({ replica: dead, released }, 'deliveries held by a silent replica handed out again');
      }
      if (this.held.size >= MAX_HELD) return;
      for (const item of await this.d.queue.due(now, SWEEP_BATCH)) {
        if (this.stopped) return;
        if (this.held.has(item.deliveryId)) continue;
        if (await this.d.queue.take(item, this.d.owner)) this.enqueue(item);
      }
    })()
      .catch((err: unknown) => this.d.log.warn({ err }, 'delivery sweep failed'))
      .finally(() => (this.sweeping = undefined));
    return this.sweeping;
  }
}

function lastOf(outcome: AttemptOutcome): { lastStatusCode: number } | { lastError: string } {
  if (outcome.statusCode !== undefined) return { lastStatusCode: outcome.statusCode };
  return { lastError: outcome.kind === 'failed' ? (outcome.error ?? 'network') : 'network' };
}
