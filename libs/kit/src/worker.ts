import type { Logger } from './logger';
import { ChangeFeed, type WakeSource } from './mongo/change-feed';
import type { Lease } from './mongo/lease';
import { serviceMetrics, type TypedHistogram } from './telemetry/metrics';

/** What a pass says of the work left: `more` asks for another pass at once. */
export type PassResult = 'more' | 'done' | void;

export interface WorkerSpec {
  /** The owning service and the job, for logs and the lag metric (`voiceapi.<service>.worker.lag`). */
  service: string;
  job: string;
  /** One pass over the work. It must tolerate running again after a crash (passes are repeated, never resumed). */
  pass: () => Promise<PassResult>;
  /** The timer's period; for a worker woken by its changes, only a safety net (e.g. a change stream that was down). */
  everyMs: number;
  /**
   * How often a lease holder looks for other replicas' work while the lease is `shared`; a holder alone
   * looks every `everyMs`, its own work waking it in-process (decision 0141).
   */
  lookMs?: number;
  /** Collections whose changes wake a pass (change streams: written by any replica, found at once). */
  wakeOn?: readonly WakeSource[];
  /** Changes within this long of the first share one pass: a little latency for far fewer passes. Default 0. */
  gatherMs?: number;
  /** Only the replica holding this lease runs passes; the worker holds and renews it (several workers may share one). */
  lease?: Pick<Lease, 'held' | 'shared' | 'hold' | 'letGo' | 'onTaken'>;
  /** At stop, after the last pass and before the lease is let go: waits for work a pass started and left running. */
  drain?: () => Promise<void>;
  log: Logger;
}

/**
 * A service's background job: one pass at a time, on the lease holder if it has a lease, woken by changes,
 * `wake()`, `wakeIn`, a lease takeover or a timer. Records lag: how long the oldest wake-up it served waited.
 * A failing pass is logged and the next wake-up tries again.
 */
export class Worker {
  private timer: NodeJS.Timeout | undefined;
  private alarm: { at: number; timer: NodeJS.Timeout } | undefined;
  private readonly feed: ChangeFeed | undefined;
  /** The pass a change asked for, while its burst is gathered. */
  private gathering: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = false;
  private stopping: Promise<void> | undefined;
  private holding: Promise<void> | undefined;
  private wokenAt: number | undefined;
  /** When the last pass began: a holder alone lets its look wait until `everyMs` after it. */
  private passedAt = 0;
  private readonly lag: TypedHistogram<{ worker: string }>;

  constructor(readonly spec: WorkerSpec) {
    this.feed =
      spec.wakeOn && spec.wakeOn.length > 0 ? new ChangeFeed(spec.wakeOn, () => this.changed(), spec.log) : undefined;
    this.lag = serviceMetrics(spec.service).histogram('worker.lag', {
      description: 'How long work waited for a background pass: from the wake-up to the end of the pass that served it',
      unit: 'ms',
    });
  }

  start(): void {
    this.holding = this.spec.lease?.hold((err) =>
      this.spec.log.warn({ err, job: this.spec.job }, 'lease renewal failed; next renewal tries again'),
    );
    // A replica that takes the lease over looks at once for what its predecessor left.
    this.spec.lease?.onTaken(() => this.wake());
    this.timer = setInterval(() => this.tick(), Math.min(this.spec.lookMs ?? Infinity, this.spec.everyMs));
    this.timer.unref();
    this.feed?.start();
    this.wake();
  }

  /** A look, unless this replica holds the lease alone and looked within `everyMs`. */
  private tick(): void {
    const alone = this.spec.lookMs !== undefined && !this.spec.lease?.shared;
    if (alone && Date.now() - this.passedAt < this.spec.everyMs) return;
    this.wake();
  }

  /** Runs a pass in `ms` (work known to fall due then), unless one is asked for sooner. */
  wakeIn(ms: number): void {
    // The timer wakes a pass sooner, and that pass asks again: no alarm (nor one past setTimeout's range).
    if (this.stopped || ms >= this.spec.everyMs) return;
    const at = Date.now() + Math.max(0, ms);
    if (this.alarm && this.alarm.at <= at) return;
    if (this.alarm) clearTimeout(this.alarm.timer);
    const timer = setTimeout(() => {
      this.alarm = undefined;
      this.wake();
    }, at - Date.now());
    timer.unref();
    this.alarm = { at, timer };
  }

  wake(): void {
    if (this.stopped) return;
    this.wokenAt ??= Date.now();
    if (this.running) {
      this.again = true;
      return;
    }
    // Cleared in `.finally`, which runs after this assignment even for a pass that ends at once.
    this.running = this.passes().finally(() => (this.running = undefined));
  }

  /** This process made work for the worker: a pass once the burst it starts is gathered. */
  changedHere(): void {
    this.changed();
  }

  /** A change seen: a pass once the burst it starts is gathered. */
  private changed(): void {
    if (!this.spec.gatherMs) return this.wake();
    if (this.stopped || this.gathering) return;
    this.wokenAt ??= Date.now();
    this.gathering = setTimeout(() => {
      this.gathering = undefined;
      this.wake();
    }, this.spec.gatherMs);
    this.gathering.unref();
  }

  get active(): boolean {
    return !this.stopped && (this.spec.lease?.held ?? true);
  }

  /** Resolves once the pass under way, and any it asked for, has ended. */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  async runNow(): Promise<void> {
    this.wake();
    await this.idle();
  }

  /** Waits for the pass under way and what it left, then lets the lease go; once only (a lease may be shared). */
  stop(): Promise<void> {
    this.stopping ??= this.stopOnce();
    return this.stopping;
  }

  private async stopOnce(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    if (this.alarm) clearTimeout(this.alarm.timer);
    clearTimeout(this.gathering);
    await this.feed?.stop();
    await this.idle();
    await this.spec.drain?.();
    await this.holding;
    await this.spec.lease?.letGo();
  }

  private async passes(): Promise<void> {
    await this.holding;
    do {
      this.again = false;
      if (!this.active) {
        // Another replica serves the work: nothing here waits for this one.
        this.wokenAt = undefined;
        return;
      }
      const served = this.wokenAt;
      this.wokenAt = undefined;
      this.passedAt = Date.now();
      let result: PassResult;
      try {
        result = await this.spec.pass();
      } catch (err) {
        this.spec.log.warn({ err, job: this.spec.job }, 'background pass failed; the next wake-up tries again');
        return;
      }
      if (served !== undefined) this.lag.record(Date.now() - served, { worker: this.spec.job });
      if (result === 'more') {
        this.again = true;
        this.wokenAt ??= served;
      }
    } while (this.again);
  }
}
