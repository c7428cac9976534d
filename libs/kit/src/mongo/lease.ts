import { Schema, type Connection, type Model } from 'mongoose';
import { serviceMetrics } from '../telemetry/metrics';
import { isDuplicateKeyError, modelOf } from './connect';

interface LeaseDoc {
  /** The lease's name, e.g. `outbox-relay`. */
  _id: string;
  holder: string;
  expiresAt: Date;
  /** Replicas that tried to take it while held, with when each last tried. */
  contenders?: Record<string, Date>;
}

const leaseSchema = new Schema<LeaseDoc>(
  {
    _id: String,
    holder: { type: String, required: true },
    expiresAt: { type: Date, required: true },
    contenders: { type: Schema.Types.Mixed },
  },
  { versionKey: false, collection: 'leases' },
);

/** A replica's name as a field name (no dots, no leading `$`). */
const fieldOf = (holder: string) => holder.replace(/[.$]/g, '_');
// No secondary index: one document per lease, always found by _id.

/**
 * Default lease time: a crashed holder's jobs wait at most this long (a stopped one hands them over at once).
 * Renewed every third of it: 0.15 store operations a second per lease on an idle replica.
 */
export const LEASE_TTL_MS = 20_000;

/**
 * A time-bound claim on a job only one replica may run at a time. A holder stalled past the lease may briefly
 * overlap its successor, so the job must tolerate a repeat.
 */
export class Lease {
  private readonly model: Model<LeaseDoc>;
  private heldUntil = 0;
  /** Workers sharing this lease, and the timer that renews it for them. */
  private holders = 0;
  private renewal: NodeJS.Timeout | undefined;
  private readonly takenListeners: (() => void)[] = [];
  private readonly lostListeners: (() => void)[] = [];
  /** Whether the last try found this replica holding the lease (for `onLost`). */
  private holding = false;
  private observed = false;
  /** Until when another replica is known to contend for the lease (its marks, read at renewal). */
  private companyUntil = 0;
  /** Marks of replicas gone quiet, removed at the next renewal. */
  private stale: string[] = [];

  constructor(
    conn: Connection,
    readonly name: string,
    readonly holder: string,
    private readonly ttlMs: number = LEASE_TTL_MS,
  ) {
    this.model = modelOf(conn, 'Lease', leaseSchema);
  }

  /** True while this replica holds the lease (by its own clock, with a safety margin). */
  get held(): boolean {
    return Date.now() < this.heldUntil;
  }

  /** True while another replica contends for the lease, so the holder looks for its work (decision 0141). */
  get shared(): boolean {
    return Date.now() < this.companyUntil;
  }

  /** Takes the lease if it is free or expired, or renews it if held; true when held afterwards. */
  async acquire(): Promise<boolean> {
    const now = new Date();
    const expiresAt = new Date(now.getTime() + this.ttlMs);
    const stale = this.stale;
    try {
      const doc = await this.model
        .findOneAndUpdate(
          { _id: this.name, $or: [{ holder: this.holder }, { expiresAt: { $lte: now } }] },
          {
            $set: { holder: this.holder, expiresAt },
            ...(stale.length > 0 && { $unset: Object.fromEntries(stale.map((c) => [`contenders.${c}`, 1])) }),
          },
          { upsert: true, new: true },
        )
        .lean<LeaseDoc>();
      // Stop trusting the lease a third of its time before it runs out, to allow for clock skew.
      const had = this.held;
      this.heldUntil = doc?.holder === this.holder ? now.getTime() + (this.ttlMs * 2) / 3 : 0;
      this.readContenders(doc?.contenders, now.getTime());
      if (!had && this.held) for (const l of this.takenListeners) l();
      this.noteHolding();
    } catch (err) {
      // Someone else holds it: the upsert tried to insert a second document with this _id.
      if (!isDuplicateKeyError(err)) throw err;
      this.heldUntil = 0;
      this.noteHolding();
      // This replica says it is here, so the holder knows it has company.
      await this.model.updateOne(
        { _id: this.name, holder: { $ne: this.holder } },
        { $set: { [`contenders.${fieldOf(this.holder)}`]: now } },
      );
    }
    return this.held;
  }

  /** Company while a mark is younger than the lease's time; older marks go at the next renewal. */
  private readContenders(contenders: Record<string, Date> | undefined, now: number): void {
    const marks = Object.entries(contenders ?? {}).filter(([c]) => c !== fieldOf(this.holder));
    const latest = Math.max(0, ...marks.map(([, at]) => new Date(at).getTime()));
    this.companyUntil = latest > 0 ? latest + this.ttlMs : 0;
    this.stale = marks.filter(([, at]) => now - new Date(at).getTime() > this.ttlMs).map(([c]) => c);
  }

  /** Holds the lease for one more worker, renewing every third of its time; resolves after the first try. */
  async hold(onError: (err: unknown) => void): Promise<void> {
    if (this.holders++ > 0) return;
    this.observe();
    const renew = () => this.acquire().then(() => undefined, onError);
    this.renewal = setInterval(() => void renew(), Math.max(100, Math.floor(this.ttlMs / 3)));
    this.renewal.unref();
    await renew();
  }

  /** `voiceapi.lease.held` from the first `hold` on: `max by (lease)` of 0 means no replica does its work. */
  private observe(): void {
    if (this.observed) return;
    this.observed = true;
    serviceMetrics('lease').gauge<{ lease: string }>(
      'held',
      { description: 'Whether this replica holds the lease (1) or not (0)', unit: '1' },
      () => [{ value: this.held ? 1 : 0, attributes: { lease: this.name } }],
    );
  }

  /** Calls `listener` each time this replica comes to hold the lease. */
  onTaken(listener: () => void): void {
    this.takenListeners.push(listener);
  }

  /** Calls `listener` when a try finds this replica no longer holding the lease it held. */
  onLost(listener: () => void): void {
    this.lostListeners.push(listener);
  }

  private noteHolding(): void {
    const holding = this.held;
    if (this.holding && !holding) for (const l of this.lostListeners) l();
    this.holding = holding;
  }

  /** One worker fewer; the last one gives the lease up. */
  async letGo(): Promise<void> {
    if (this.holders === 0 || --this.holders > 0) return;
    clearInterval(this.renewal);
    this.renewal = undefined;
    await this.release().catch(() => undefined); // not given up, it expires within its TTL
  }

  /** Gives the lease up at once (on shutdown), so another replica need not wait for it to expire. */
  async release(): Promise<void> {
    if (this.heldUntil === 0) return;
    this.heldUntil = 0;
    this.noteHolding();
    await this.model.deleteOne({ _id: this.name, holder: this.holder });
  }
}
