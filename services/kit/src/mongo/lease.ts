import { Schema, type Connection, type Model } from 'mongoose';
import { serviceMetrics } from '../telemetry/metrics';
import { isDuplicateKeyError, modelOf } from './connect';

interface LeaseDoc {
  /** The lease's name, e.g. `outbox-relay`. */
  _id: string;
  holder: string;
  expiresAt: Date;
  /** The replicas that tried to take it while it was held, each with when it last tried. */
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
 * How long a lease lasts without renewal, by default: a crashed holder's jobs wait at most this
 * long for another replica (a stopped one hands them over at once). Renewed every third of it, so
 * an idle replica sends 0.15 store operations a second per lease.
 */
export const LEASE_TTL_MS = 20_000;

/**
 * A time-bound claim on a job that only one replica of a service may run at a time (the outbox
 * relay, a sweeper). The holder renews it while working; if the holder dies, another replica
 * takes over once it expires. A holder that stalls longer than the lease may overlap with its
 * successor for a moment, so the job itself must tolerate a repeat (events carry stable ids).
 */
export class Lease {
  private readonly model: Model<LeaseDoc>;
  private heldUntil = 0;
  /** Workers running on this lease (several may share one), and the timer that renews it for them. */
  private holders = 0;
  private renewal: NodeJS.Timeout | undefined;
  private readonly takenListeners: (() => void)[] = [];
  private readonly lostListeners: (() => void)[] = [];
  /** Whether the last try found this replica holding the lease (what `onLost` compares with). */
  private holding = false;
  private observed = false;
  /** Until when another replica is known to contend for the lease (from its marks, read at renewal). */
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

  /**
   * True while another replica contends for the lease (it tried to take it within the lease's
   * time): the holder then has another replica's work to look for (decision 0141). Known to the
   * holder from its renewals.
   */
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

  /**
   * Keeps trying to hold the lease for one more worker: taken or renewed now, then every third
   * of its time while any worker holds it. Resolves after the first try (held or not).
   */
  async hold(onError: (err: unknown) => void): Promise<void> {
    if (this.holders++ > 0) return;
    this.observe();
    const renew = () => this.acquire().then(() => undefined, onError);
    this.renewal = setInterval(() => void renew(), Math.max(100, Math.floor(this.ttlMs / 3)));
    this.renewal.unref();
    await renew();
  }

  /**
   * The gauge `voiceapi.lease.held` (attribute `lease`, the lease's name): 1 while this replica
   * holds the lease, else 0, from memory at each export. Observed from the first `hold` on, for as
   * long as the process lives (after `letGo` it says 0): `max by (lease)` of 0 means no replica
   * holds it, and its work is not being done.
   */
  private observe(): void {
    if (this.observed) return;
    this.observed = true;
    serviceMetrics('lease').gauge<{ lease: string }>(
      'held',
      { description: 'Whether this replica holds the lease (1) or not (0)', unit: '1' },
      () => [{ value: this.held ? 1 : 0, attributes: { lease: this.name } }],
    );
  }

  /** Calls `listener` each time this replica comes to hold the lease (first taken, or taken over). */
  onTaken(listener: () => void): void {
    this.takenListeners.push(listener);
  }

  /** Calls `listener` when a try finds this replica no longer holding the lease it held (taken over, or given up). */
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
    await this.release().catch(() => undefined); // a lease not given up expires within its TTL, and another replica takes it then
  }

  /** Gives the lease up at once (on shutdown), so another replica need not wait for it to expire. */
  async release(): Promise<void> {
    if (this.heldUntil === 0) return;
    this.heldUntil = 0;
    this.noteHolding();
    await this.model.deleteOne({ _id: this.name, holder: this.holder });
  }
}
