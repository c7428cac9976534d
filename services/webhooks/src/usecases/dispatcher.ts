// Over 300 lines because slots, first attempts, holds and sweep share one in-memory state: split, invariants scatter.
import { type Logger } from '@voiceapi/kit/service';
import { Worker } from '@voiceapi/kit/work';
import { performance } from 'node:perf_hooks';
import type { DeliveryDoc, DeliveryStore } from '../store/delivery-store';
import type { AttemptResult } from './delivery-attempts';

export interface DispatcherDeps {
  attempt: (delivery: DeliveryDoc) => Promise<AttemptResult>;
  deliveries: DeliveryStore;
  log: Logger;
  now: () => Date;
  /** Attempts in flight to one endpoint: a slow endpoint holds this many, and no more. */
  perEndpoint: number;
  maxInFlight: number;
  /** How long a fan-out waits for a first attempt before storing the delivery pending, held here. */
  firstWaitMs: number;
  /** Past this, any replica may take a delivery this one stored or took. */
  holdMs: number;
  /** The sender's timeout: an attempt starts only with this much hold left. */
  attemptTimeoutMs: number;
  sweepIntervalMs: number;
}

/** Hold left beyond the attempt timeout for an attempt to start; else the hold is renewed. */
const HOLD_MARGIN_MS = 5_000;
/** The sweeper stops taking work while this replica holds this many deliveries. */
const MAX_HELD = 50_000;
const STOP_WAIT_MS = 2_000;
/** Deliveries of one endpoint held here at most, however fast it answers. */
const MAX_WAITING_PER_ENDPOINT = 5_000;

type FirstOutcome = AttemptResult | 'stopped';

interface Held {
  delivery: DeliveryDoc;
  /** Its stored `nextAttemptAt` while held; absent while a first attempt is not stored yet. */
  heldUntil?: Date;
  /** A first attempt: tells its fan-out the outcome, which the fan-out stores (unless its wait ran out). */
  tell?: (outcome: FirstOutcome) => void;
  /** The fan-out's write of it pending, once its wait ran out (false: a delivery of that id existed). */
  stored?: Promise<boolean>;
}

/**
 * Runs delivery attempts with `perEndpoint` slots per endpoint, endpoints taking turns, so a slow or dead endpoint
 * delays only itself. A delivery is one document (decision 0138); its `nextAttemptAt` is both its retry time and
 * this replica's hold, taken by a conditional write, so a dead replica's holds just lapse. At least once: a crash
 * between sending and recording resends with the same `webhook-id` and body.
 */
export class Dispatcher {
  private readonly waiting = new Map<string, Held[]>();
  private readonly active = new Map<string, number>();
  private readonly held = new Map<string, Held>();
  private readonly running = new Set<Promise<void>>();
  /** Endpoints with due deliveries in the store not yet taken here (taken as slots free). */
  private readonly backlogged = new Set<string>();
  private readonly refilling = new Set<string>();
  /** Each endpoint's recent time per attempt, ms. */
  private readonly pace = new Map<string, number>();
  private inFlight = 0;
  private stopped = true;
  private readonly sweeper: Worker;

  constructor(private readonly d: DispatcherDeps) {
    this.sweeper = new Worker({
      service: 'webhooks',
      job: 'delivery-sweep',
      everyMs: d.sweepIntervalMs,
      log: d.log,
      pass: () => this.sweep(),
    });
  }

  start(): void {
    this.stopped = false;
    this.sweeper.start();
  }

  /** Waits a moment for attempts in flight; unstarted deliveries are made due now for another replica. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.sweeper.stop();
    const unstarted = [...this.waiting.values()].flat();
    this.waiting.clear();
    for (const h of unstarted) this.forget(h);
    for (const h of unstarted) {
      if (h.tell) h.tell('stopped');
      else
        await this.handBack(h).catch((err: unknown) => this.d.log.warn({ err }, 'a held delivery was not handed back'));
    }
    // An unfinished attempt is resent by whoever takes the delivery once its hold lapses.
    await Promise.race([
      Promise.allSettled([...this.running]),
      new Promise((r) => setTimeout(r, STOP_WAIT_MS).unref()),
    ]);
  }

  /** A fan-out's delivery: stored with its outcome if the attempt ends within `firstWaitMs`, else pending and held. */
  async first(delivery: DeliveryDoc): Promise<void> {
    if (this.stopped || this.held.has(delivery._id) || this.busy(delivery.endpointId)) {
      // Endpoint slow or down: wait in the store, due now, so a backlog holds neither memory nor a partition.
      await this.d.deliveries.insert({ ...delivery, nextAttemptAt: this.d.now() });
      this.backlogged.add(delivery.endpointId);
      return;
    }
    const h: Held = { delivery };
    const told = new Promise<FirstOutcome | 'late'>((resolve) => {
      // Stored pending in the same turn, so an attempt ending later records its outcome as a change.
      const wait = setTimeout(() => {
        delete h.tell;
        const heldUntil = new Date(this.d.now().getTime() + this.d.holdMs);
        h.heldUntil = heldUntil;
        h.stored = this.d.deliveries.insert({ ...delivery, nextAttemptAt: heldUntil, updatedAt: this.d.now() });
        resolve('late');
      }, this.d.firstWaitMs);
      h.tell = (outcome) => {
        clearTimeout(wait);
        delete h.tell;
        resolve(outcome);
      };
    });
    this.enqueue(h);
    const outcome = await told;
    if (outcome === 'late') {
      // A delivery of that id existed (this message was fanned out before): that one stands.
      if (!(await h.stored!)) this.forget(h);
      return;
    }
    await this.d.deliveries.insert(stored(delivery, outcome, this.d.now()));
  }

  /** Pending deliveries fall due (a resume or a recovery): looked for now. */
  wake(): void {
    this.sweeper.wake();
  }

  private enqueue(h: Held): void {
    this.held.set(h.delivery._id, h);
    const list = this.waiting.get(h.delivery.endpointId);
    if (list) list.push(h);
    else this.waiting.set(h.delivery.endpointId, [h]);
    this.pump();
  }

  private forget(h: Held): void {
    if (this.held.get(h.delivery._id) === h) this.held.delete(h.delivery._id);
  }

  private pump(): void {
    let progressed = true;
    while (!this.stopped && progressed && this.inFlight < this.d.maxInFlight) {
      progressed = false;
      // One per endpoint per pass: endpoints take turns for the shared slots.
      for (const [endpointId, list] of this.waiting) {
        if (this.inFlight >= this.d.maxInFlight) break;
        if ((this.active.get(endpointId) ?? 0) >= this.d.perEndpoint) continue;
        const h = list.shift()!;
        if (list.length === 0) this.waiting.delete(endpointId);
        this.launch(h);
        progressed = true;
      }
    }
  }

  private launch(h: Held): void {
    const { endpointId } = h.delivery;
    this.inFlight++;
    this.active.set(endpointId, (this.active.get(endpointId) ?? 0) + 1);
    const run = this.run(h)
      .catch((err: unknown) => {
        // The store failed (the attempt may have gone out): once its hold lapses, any replica sends it again.
        this.d.log.warn({ err, deliveryId: h.delivery._id }, 'delivery attempt could not be recorded');
        h.tell?.('stopped');
      })
      .finally(() => {
        this.forget(h);
        this.inFlight--;
        const n = (this.active.get(endpointId) ?? 1) - 1;
        if (n === 0) this.active.delete(endpointId);
        else this.active.set(endpointId, n);
        this.running.delete(run);
        this.pump();
        if (this.backlogged.has(endpointId)) this.refill(endpointId);
      });
    this.running.add(run);
  }

  private async run(h: Held): Promise<void> {
    if (h.stored && !(await h.stored)) return;
    if (h.heldUntil && !(await this.holdLongEnough(h))) return;
    const started = performance.now();
    const result = await this.d.attempt(h.delivery);
    this.paced(h.delivery.endpointId, performance.now() - started);
    if (h.tell) {
      h.tell(result); // the fan-out waiting for it stores it
      return;
    }
    if (h.stored) await h.stored;
    const change =
      result.kind === 'waiting'
        ? { set: { nextAttemptAt: result.nextAttemptAt, updatedAt: this.d.now() } }
        : result.change;
    await this.d.deliveries.change(h.delivery, h.heldUntil!, change);
    if (result.kind !== 'ended') this.sweeper.wakeIn(result.nextAttemptAt.getTime() - this.d.now().getTime());
  }

  /** Renews the hold if less than a timeout's worth is left; false when it was lost. */
  private async holdLongEnough(h: Held): Promise<boolean> {
    const now = this.d.now().getTime();
    if (h.heldUntil!.getTime() - now >= this.d.attemptTimeoutMs + HOLD_MARGIN_MS) return true;
    const until = new Date(now + this.d.holdMs);
    if (!(await this.d.deliveries.take(h.delivery, h.heldUntil!, until))) return false;
    h.heldUntil = until;
    return true;
  }

  /** A held delivery not started: due now, for any replica. */
  private async handBack(h: Held): Promise<void> {
    if (h.stored && !(await h.stored)) return;
    if (h.heldUntil) await this.d.deliveries.change(h.delivery, h.heldUntil, { set: { nextAttemptAt: this.d.now() } });
  }

  /** Room here: what its slots clear in `firstWaitMs` at its pace (at least twice); the rest wait in the store. */
  private room(endpointId: string): number {
    const paceMs = Math.max(1, this.pace.get(endpointId) ?? this.d.firstWaitMs);
    const allowed = Math.min(
      MAX_WAITING_PER_ENDPOINT,
      Math.max(2, Math.floor(this.d.firstWaitMs / paceMs)) * this.d.perEndpoint,
    );
    return allowed - (this.active.get(endpointId) ?? 0) - (this.waiting.get(endpointId)?.length ?? 0);
  }

  private busy(endpointId: string): boolean {
    return this.room(endpointId) <= 0;
  }

  private paced(endpointId: string, ms: number): void {
    const before = this.pace.get(endpointId);
    this.pace.set(endpointId, before === undefined ? ms : before + (ms - before) / 8);
  }

  /** Takes due deliveries as far as slots go; wakes itself for the next one due. */
  private async sweep(): Promise<void> {
    if (this.stopped) return;
    const now = this.d.now();
    // Idle or only future retries: one read, and a wake at the first.
    const earliest = await this.d.deliveries.earliestDueAt();
    if (!earliest) return;
    if (earliest > now) {
      this.sweeper.wakeIn(earliest.getTime() - now.getTime());
      return;
    }
    const nextDueAt = await this.d.deliveries.nextDueAt(now);
    if (nextDueAt) this.sweeper.wakeIn(nextDueAt.getTime() - now.getTime());
    for (const endpointId of await this.d.deliveries.dueEndpoints(now)) {
      this.backlogged.add(endpointId);
      await this.refillNow(endpointId);
    }
  }

  private refill(endpointId: string): void {
    if (this.refilling.has(endpointId) || this.stopped) return;
    this.refillNow(endpointId).catch((err: unknown) =>
      this.d.log.warn({ err, endpointId }, 'due deliveries could not be taken; the next sweep tries again'),
    );
  }

  /** Takes an endpoint's due deliveries up to its free room, skipping any another replica took first. */
  private async refillNow(endpointId: string): Promise<void> {
    if (this.refilling.has(endpointId)) return;
    this.refilling.add(endpointId);
    try {
      for (;;) {
        const room = this.room(endpointId);
        if (room <= 0 || this.stopped || this.held.size >= MAX_HELD) return;
        const now = this.d.now();
        const due = (await this.d.deliveries.due(endpointId, now, room)).filter((d) => !this.held.has(d._id));
        if (due.length === 0) {
          this.backlogged.delete(endpointId);
          return;
        }
        let taken = 0;
        for (const delivery of due) {
          const heldUntil = new Date(this.d.now().getTime() + this.d.holdMs);
          if (!(await this.d.deliveries.take(delivery, delivery.nextAttemptAt ?? now, heldUntil))) continue;
          this.enqueue({ delivery, heldUntil });
          taken++;
        }
        if (taken === 0) return; // others took them: their sweeps go on, this one stops
      }
    } finally {
      this.refilling.delete(endpointId);
    }
  }
}

/** A first attempt's delivery with its outcome applied, or due now when it was not made. */
function stored(delivery: DeliveryDoc, outcome: FirstOutcome, now: Date): DeliveryDoc {
  if (outcome === 'stopped') return { ...delivery, nextAttemptAt: now };
  if (outcome.kind === 'waiting') return { ...delivery, nextAttemptAt: outcome.nextAttemptAt };
  const doc: DeliveryDoc = { ...delivery, ...outcome.change.set };
  for (const k of outcome.change.unset ?? []) delete doc[k];
  return doc;
}
