import { Worker, type Lease, type Logger } from '@voiceapi/kit';
import type { QueueStore } from '../store/queue-store';
import type { AttemptResult } from './delivery-attempts';

export interface DispatcherDeps {
  /** One attempt of a delivery (the rules: `DeliveryAttempts`). */
  attempt: (endpointId: string, deliveryId: string) => Promise<AttemptResult>;
  queue: QueueStore;
  /** One replica at a time hands out due deliveries nobody holds. */
  sweepLease: Lease;
  /** This replica. */
  owner: string;
  log: Logger;
  now: () => Date;
  /** Attempts in flight to one endpoint: a slow endpoint holds this many, and no more. */
  perEndpoint: number;
  /** Attempts in flight in all. */
  maxInFlight: number;
  /** A retry due within this long stays in memory; a later one goes back to the queue for the sweeper. */
  holdMs: number;
  /** The sweeper's safety net: a queued delivery wakes it at once, and the next due one when it falls due. */
  sweepIntervalMs: number;
  /** This replica says it is alive this often; a replica silent for `aliveMs` is presumed dead. */
  heartbeatMs: number;
  aliveMs: number;
}

const RETRY_AFTER_STORE_ERROR_MS = 1_000;
/** The sweeper stops handing out work while this replica holds this many deliveries. */
const MAX_HELD = 50_000;
const SWEEP_BATCH = 500;
const STOP_WAIT_MS = 2_000;
/** Ended deliveries leave the claims and the queue together, this often: one delete for many. */
const FORGET_EVERY_MS = 2_000;
const FORGET_BATCH = 1_000;

/**
 * Runs delivery attempts, each endpoint on its own: attempts to one endpoint never take more than
 * `perEndpoint` of the `maxInFlight` slots, and endpoints take turns, so a slow or dead endpoint
 * (15 s timeouts, a backlog of 10,000) delays only itself.
 *
 * What this replica holds is in memory and claimed in the store; a retry due soon waits here on a
 * timer, a later one goes back to the queue. Three workers keep it going: a heartbeat (this
 * replica is alive), the sweeper (one replica, under a lease: it gives back to the queue what a
 * silent replica had claimed and takes what comes due), and the unclaiming of ended deliveries in
 * batches. Delivery is at least once: a crash between sending and recording sends the same
 * message again, with the same `webhook-id` and body.
 */
export class Dispatcher {
  private readonly waiting = new Map<string, string[]>();
  private readonly active = new Map<string, number>();
  private readonly held = new Set<string>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly running = new Set<Promise<void>>();
  private inFlight = 0;
  /** Ended deliveries whose claim (or queue entry) is still to be deleted. */
  private ended: string[] = [];
  private stopped = true;
  private readonly heartbeat: Worker;
  private readonly sweeper: Worker;
  private readonly unclaim: Worker;

  constructor(private readonly d: DispatcherDeps) {
    const { log } = d;
    this.heartbeat = new Worker({
      service: 'webhooks',
      job: 'heartbeat',
      everyMs: d.heartbeatMs,
      log,
      pass: () => d.queue.heartbeat(d.owner, new Date(d.now().getTime() + d.aliveMs)),
    });
    this.sweeper = new Worker({
      service: 'webhooks',
      job: 'delivery-sweep',
      everyMs: d.sweepIntervalMs,
      wakeOn: [d.queue.changes()],
      gatherMs: 100,
      lease: d.sweepLease,
      log,
      pass: () => this.sweep(),
    });
    this.unclaim = new Worker({
      service: 'webhooks',
      job: 'unclaim-ended',
      everyMs: FORGET_EVERY_MS,
      log,
      pass: () => this.forget(),
    });
  }

  async start(): Promise<void> {
    // What an earlier life of this replica held is nobody's now: the sweeper hands it out again.
    const released = await this.d.queue.releaseAll(this.d.owner, this.d.now());
    if (released > 0) this.d.log.info({ released }, 'deliveries held before a restart handed back');
    this.stopped = false;
    // The heartbeat's first pass says at once that this replica is alive.
    for (const w of [this.heartbeat, this.sweeper, this.unclaim]) w.start();
  }

  /** Stops taking work, waits for attempts in flight, and hands back what it held. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.timers.forEach(clearTimeout);
    this.timers.clear();
    this.waiting.clear();
    await this.sweeper.stop();
    // Attempts in flight get a moment to finish; one that does not is sent again by whoever takes
    // the delivery over (at least once, same id), rather than holding up the shutdown for 15 s.
    await Promise.race([
      Promise.allSettled([...this.running]),
      new Promise((r) => setTimeout(r, STOP_WAIT_MS).unref()),
    ]);
    this.held.clear();
    await this.unclaim.stop();
    await this.forget();
    await this.heartbeat.stop();
    await this.d.queue.releaseAll(this.d.owner, this.d.now());
    await this.d.queue.retire(this.d.owner);
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

  /** One attempt and what follows from it; true while the delivery stays in memory (a retry on a timer). */
  private async attempt(endpointId: string, deliveryId: string): Promise<boolean> {
    const result = await this.d.attempt(endpointId, deliveryId);
    if (result.kind === 'ended') {
      // Its claim goes with the next batch.
      this.ended.push(deliveryId);
      return false;
    }
    if (result.inMs <= this.d.holdMs && !this.stopped) {
      this.later(endpointId, deliveryId, result.inMs);
      return true;
    }
    await this.d.queue.release({ deliveryId, endpointId }, new Date(this.d.now().getTime() + result.inMs));
    return false;
  }

  /**
   * Deletes the claims (and queue entries) of ended deliveries, many at once. A crash before it
   * leaves them claimed: whoever takes them over reads the delivery first and finds it ended.
   */
  private async forget(): Promise<void> {
    while (this.ended.length > 0) {
      const batch = this.ended.splice(0, FORGET_BATCH);
      try {
        await this.d.queue.unclaimMany(batch);
      } catch (err) {
        this.ended.push(...batch);
        this.d.log.warn({ err }, 'ended deliveries could not be unclaimed yet');
        return;
      }
    }
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

  /** The lease holder gives dead replicas' claims back to the queue, then takes what is due. */
  private async sweep(): Promise<void> {
    if (this.stopped) return;
    const now = this.d.now();
    for (const dead of await this.d.queue.deadOwners(now)) {
      if (dead === this.d.owner) continue;
      const released = await this.d.queue.releaseAll(dead, now);
      await this.d.queue.retire(dead);
      if (released > 0)
        this.d.log.info({ replica: dead, released }, 'deliveries held by a silent replica handed out again');
    }
    if (this.held.size >= MAX_HELD) return;
    const { items, nextDueAt } = await this.d.queue.due(now, SWEEP_BATCH);
    if (nextDueAt) this.sweeper.wakeIn(nextDueAt.getTime() - now.getTime());
    for (const item of items) {
      if (this.stopped) return;
      if (this.held.has(item.deliveryId)) continue;
      if (await this.d.queue.take(item, this.d.owner)) this.enqueue(item);
    }
  }
}
