// Over 300 lines because the dispatch pass and placing a dial stay together (memory across passes: dispatch-memory.ts).
import { scopeOfRecord, type TenantScope } from '@voiceapi/kit/grpc';
import {
  DeadlineCounter,
  type LateAttributes,
  type NoAttributes,
  type TypedCounter,
  type TypedHistogram,
} from '@voiceapi/kit/metrics';
import { type Logger } from '@voiceapi/kit/service';
import { outboundCallId, type Call } from '../domain/call';
import type { CallStore } from '../store/call-store';
import type { QueuedDial } from '../domain/dial';
import type { LineStore } from '../store/line-store';
import type { TenantSettingsStore } from '../store/tenant-settings-store';
import type { CallRunner } from './call-runner';
import { LinesFull, PassSignals } from './dispatch-memory';
import type { HeldDials } from './held-dials';
import type { DialClaims } from './ports';

/** How long a dial waits when leads or billing could not answer. */
const RETRY_MS = 5_000;
/** A dial held this long by its offset moves to the dial queue: a backlog holds back no commits (decision 0147). */
const SPILL_AFTER_MS = 30_000;
const SPILL_BATCH = 1_000;
/** The lead-to-dial SLO's threshold (observability/slos.yaml): a first attempt decided later than this is late. */
export const LEAD_TO_DIAL_DEADLINE_MS = 60_000;

export interface DialerDeps {
  /** The dials this replica holds (decision 0147). */
  queue: HeldDials;
  /** The dial queue, for dials waiting long; its lease holder holds them (`kept` wakes it if that is this replica). */
  spill?: {
    keep(dials: readonly QueuedDial[]): Promise<void>;
    kept(): void;
    /** Whether a dial held from the queue is still there (a contact forgotten drops it there). */
    has(scope: TenantScope, dialId: string): Promise<boolean>;
    removeContact(scope: TenantScope, contactId: string): Promise<void>;
  };
  calls: CallStore;
  lines: LineStore;
  settings: TenantSettingsStore;
  claims: DialClaims;
  runner: CallRunner;
  log: Logger;
  now: () => Date;
  /** What a campaign without a number of its own calls from. */
  platformNumber: string;
  /** Asks for a dispatch pass now (a dial came), or in `ms` (a postponed dial falls due then). */
  wake: () => void;
  wakeIn: (ms: number) => void;
  metrics?: {
    dials: TypedCounter<{ result: string }>;
    /** From the moment a lead could be dialled (its dial requested) to its first call ringing, in seconds. */
    dialDelay?: TypedHistogram<{ waited_for_lines: 'true' | 'false' }>;
    /** Failed tries to place a lead's first attempt on the platform's side (leads or billing unreachable; retried). */
    firstDialTriesFailed?: TypedCounter<Record<string, never>>;
    /**
     * Leads' first attempts, each counted once: in time, or late the moment `LEAD_TO_DIAL_DEADLINE_MS` passes
     * undecided (the lead-to-dial SLO); a wait for the tenant's own busy lines is never late.
     */
    firstDials?: TypedCounter<LateAttributes<NoAttributes>>;
  };
}

/**
 * Turns dial requests into calls: held in memory until placed or dropped (decision 0147), claimed with leads (a
 * contact cancelled or opted out is never dialled), given a hold, written ringing (one try only inserts it), rung.
 */
export class Dialer {
  private readonly inFlight = new Map<string, Promise<void>>();
  /** Where the next pass starts in the list of tenants, so none is always served first. */
  private turn = 0;
  private readonly signals = new PassSignals();
  private readonly linesFull = new LinesFull();
  private spilledAt = 0;
  private readonly firstDials?: DeadlineCounter<NoAttributes>;
  /** First attempts a try of ours failed to place (leads or billing away): never excused as waiting for lines. */
  private readonly triedAndFailed = new Set<string>();

  constructor(private readonly d: DialerDeps) {
    if (d.metrics?.firstDials)
      this.firstDials = new DeadlineCounter(d.metrics.firstDials, LEAD_TO_DIAL_DEADLINE_MS, {
        initial: [{}],
        // Waited for the tenant's own busy lines, unless a try of ours failed meanwhile (failing tries fill lines too).
        excused: (key, sinceMs) =>
          !this.triedAndFailed.has(key) && this.linesFull.lastAt(key.split(' ')[0]!) >= sinceMs,
        // Spilled to the dial queue or handed to another replica: counted by whoever holds it next.
        held: (key) => {
          const [tenantId, dialId] = key.split(' ') as [string, string];
          return this.inFlight.has(dialId) || this.d.queue.has(scopeOfRecord(tenantId), dialId);
        },
        now: () => this.d.now().getTime(),
      });
  }

  /** A lead's first attempt waits from its request (idempotent): counted late if undecided past the deadline. */
  private waitsForFirstDial(q: Pick<QueuedDial, 'tenantId' | 'dialId' | 'attempt' | 'requestedAt'>): void {
    if (q.attempt === 1 && q.requestedAt) this.firstDials?.wait(`${q.tenantId} ${q.dialId}`, q.requestedAt, {});
  }

  /** Drops the waiting dials of a contact that was cancelled or erased (idempotent). */
  async forgetContact(scope: TenantScope, contactId: string): Promise<void> {
    const dropped = this.d.queue.removeContact(scope, contactId);
    if (dropped > 0) this.d.metrics?.dials.add(dropped, { result: 'contact_gone' });
    await this.d.spill?.removeContact(scope, contactId);
  }

  /** Holds a dial until it is placed or dropped (idempotent by dial id; `release` then), and asks for a pass. */
  enqueue(
    scope: TenantScope,
    req: Omit<QueuedDial, 'tenantId' | 'queuedAt' | 'notBefore'>,
    release: () => void,
    source?: { topic: string; partition: number },
  ): void {
    const now = this.d.now();
    if (!this.d.queue.add({ ...req, tenantId: scope.tenantId, queuedAt: now, notBefore: now }, release, source)) return;
    this.waitsForFirstDial({ ...req, tenantId: scope.tenantId });
    this.signals.noteQueued(scope.tenantId);
    if (this.signals.takeQueued()) this.d.wake();
  }

  /** Waits for dials being set up (calls already ringing run on; recovery finishes them if this process ends first). */
  async drain(): Promise<void> {
    await Promise.allSettled(this.inFlight.values());
  }

  isDispatching(dialId: string): boolean {
    return this.inFlight.has(dialId);
  }

  /** Whether a freed line could start a waiting dial; when not, a freed line is no reason for a pass. */
  get waitingForLines(): boolean {
    return this.signals.waitingForLines;
  }

  /** One pass: each waiting tenant in turn gets its due dials onto its own free lines, so no backlog delays another. */
  async dispatch(): Promise<number> {
    this.signals.passStarted();
    let outcome: { started: number; leftWaiting: boolean; saturated: Set<string> } | undefined;
    try {
      outcome = await this.dispatchOnce();
    } finally {
      this.signals.passEnded(outcome);
    }
    await this.spillWaiting();
    return outcome.started;
  }

  /** Moves dials held past `SPILL_AFTER_MS` (not being set up) to the dial queue, so their offsets can commit. */
  private async spillWaiting(): Promise<void> {
    const now = this.d.now().getTime();
    if (!this.d.spill || now - this.spilledAt < SPILL_AFTER_MS / 2) return;
    this.spilledAt = now;
    const waiting = this.d.queue
      .heldSince(now - SPILL_AFTER_MS, SPILL_BATCH)
      .filter((q) => !this.inFlight.has(q.dialId));
    if (waiting.length === 0) return;
    await this.d.spill.keep(waiting);
    // One set up meanwhile stays held by its offset; its queued copy is refused once it is placed.
    for (const q of waiting) if (!this.inFlight.has(q.dialId)) this.d.queue.remove(scopeOfRecord(q.tenantId), q.dialId);
    this.d.spill.kept();
  }

  private async dispatchOnce(): Promise<{ started: number; leftWaiting: boolean; saturated: Set<string> }> {
    const now = this.d.now();
    const tenants = this.d.queue.tenantsWaiting();
    const start = tenants.length > 0 ? this.turn++ % tenants.length : 0;
    let started = 0;
    let leftWaiting = false;
    const saturated = new Set<string>();
    for (const tenantId of [...tenants.slice(start), ...tenants.slice(0, start)]) {
      // The queue holds live dials only (sandbox keys never dial).
      const scope = scopeOfRecord(tenantId);
      // An earlier pass found the tenant's lines all busy with dials due: those dials waited for them.
      const linesFullBefore = this.linesFull.lastAt(tenantId);
      const limit = await this.d.settings.maxConcurrentCalls(scope);
      // Read once per tenant and pass: each line taken below is added to it.
      const held = await this.d.lines.held(scope);
      const free = limit - held.length;
      if (free <= 0) {
        leftWaiting = true;
        saturated.add(tenantId);
        this.linesFull.mark(tenantId, now.getTime());
        continue;
      }
      // Dials being set up are still held and hold lines: read past them, and one more, to know whether any waits.
      const due = this.d.queue
        .due(scope, now, free + this.inFlight.size + 1)
        .filter((q) => !this.inFlight.has(q.dialId));
      // Dials taken over from the dial queue were never seen here before: their waits count from now on.
      for (const q of due) this.waitsForFirstDial(q);
      const dials = due.slice(0, free);
      // Their lines in one write; a dial whose line another replica took waits for the next pass.
      const callIds = dials.map((q) => outboundCallId(tenantId, q.dialId));
      const taken = await this.d.lines.takeMany(scope, callIds, limit, now, held);
      if (due.length > taken.size) {
        leftWaiting = true;
        // `held` has gained the lines just taken (and any found taken by another replica).
        if (held.length >= limit) {
          saturated.add(tenantId);
          this.linesFull.mark(tenantId, now.getTime());
        }
      }
      for (const [i, q] of dials.entries()) {
        const callId = callIds[i]!;
        if (!taken.has(callId)) continue;
        const waitedForLines = q.requestedAt !== undefined && linesFullBefore >= q.requestedAt.getTime();
        const p = this.place(scope, q, callId, waitedForLines).finally(() => this.inFlight.delete(q.dialId));
        this.inFlight.set(q.dialId, p);
        started++;
      }
    }
    this.linesFull.prune(new Set(tenants), now.getTime());
    // Only tenants left waiting are saturated, so a freed line of theirs wakes a pass (`waitingForLines`).
    return { started, leftWaiting, saturated };
  }

  private async place(scope: TenantScope, q: QueuedDial, callId: string, waitedForLines: boolean): Promise<void> {
    let ringing: Call | null = null;
    try {
      ringing = await this.prepare(scope, q, callId, waitedForLines);
    } catch (err) {
      // Leads or billing could not answer: the request waits and is tried again.
      this.d.log.warn({ err, dialId: q.dialId }, 'dial could not be prepared; retrying later');
      if (q.attempt === 1 && q.requestedAt) {
        this.d.metrics?.firstDialTriesFailed?.add(1, {});
        if (this.triedAndFailed.size >= 100_000) this.triedAndFailed.clear(); // dials dropped undecided leave keys
        this.triedAndFailed.add(`${q.tenantId} ${q.dialId}`);
      }
      // If the store is away these fail too: the dial stays due on the same call id; recovery frees a stray line.
      // A line whose call another try carries (ringing or in progress) stays.
      const row = await this.d.calls.byId(callId).catch(() => null);
      if (!row || !['ringing', 'in_progress'].includes(row.status))
        await this.d.lines.free(scope, callId).catch(() => undefined);
      this.d.queue.postpone(scope, q.dialId, new Date(this.d.now().getTime() + RETRY_MS));
      this.d.wakeIn(RETRY_MS);
      return;
    }
    if (!ringing) return;
    void this.d.runner
      .run(ringing)
      .catch((err: unknown) => this.d.log.error({ err, callId }, 'call could not be finished; recovery will'));
  }

  /** The steps before the phone rings; the ringing call, or null when this dial ends here. */
  private async prepare(
    scope: TenantScope,
    q: QueuedDial,
    callId: string,
    waitedForLines: boolean,
  ): Promise<Call | null> {
    const claim = await this.d.claims.claim(scope, q.contactId, q.dialId);
    // Leads allows a dial id once and rows follow a claim: only a repeat can find a row.
    let call = claim.allowed ? null : await this.d.calls.byId(callId);
    if (!claim.allowed && !(claim.refusal === 'already_claimed' && (!call || call.status === 'queued'))) {
      // Refused (leads moved the contact on), or claimed and carried by an earlier try.
      this.d.metrics?.dials.add(1, { result: claim.refusal });
      // A row of its own: an earlier try carried it, and counted its delay (a redelivered request).
      if (!call) this.firstAttemptDecided(q, waitedForLines);
      await this.drop(scope, q, callId, call);
      return null;
    }
    if (!call) {
      // No row yet (or a try died before writing it): the hold, then the row written ringing, whose insert
      // admits one try only (decision 0145).
      const fresh: Call = {
        id: callId,
        tenantId: q.tenantId,
        direction: 'outbound',
        status: 'ringing',
        dialId: q.dialId,
        contactId: q.contactId,
        campaignId: claim.allowed ? claim.campaignId : q.campaignId,
        ...((claim.allowed ? claim.agentName : q.agentName) && {
          agentName: (claim.allowed ? claim.agentName : q.agentName)!,
        }),
        fromNumber: (claim.allowed ? claim.fromNumber : q.fromNumber) ?? this.d.platformNumber,
        toNumber: q.phone,
        startedAt: this.d.now(),
        durationSeconds: 0,
        maxCallSeconds: claim.allowed ? claim.maxCallSeconds || q.maxCallSeconds : q.maxCallSeconds,
        sandbox: false,
        holdFailed: false,
        billingStatus: 'pending',
        hasTranscript: false,
        hasAnalysis: false,
        hasRecording: false,
      };
      if ((await this.d.runner.placeHold(fresh)) === 'insufficient')
        return this.refuseForCredit(scope, q, { ...fresh, status: 'queued' }, waitedForLines, false);
      if (await this.createOwn(scope, fresh)) return this.rang(scope, q, fresh, waitedForLines, true);
      call = await this.d.calls.byId(callId);
    }
    if (!call || call.status !== 'queued') {
      await this.drop(scope, q, callId, call);
      return null;
    }
    // A row left queued: releases before 0145 wrote the row before its hold.
    if ((await this.d.runner.placeHold(call)) === 'insufficient')
      return this.refuseForCredit(scope, q, call, waitedForLines, true);
    // Queued → ringing once: the last check before the carrier is asked.
    const ringing = await this.d.calls.setRinging(callId);
    if (!ringing) {
      this.d.queue.remove(scope, q.dialId);
      return null;
    }
    return this.rang(scope, q, ringing, waitedForLines, false);
  }

  /** True when this try wrote the row; an insert that errored may have applied (then the row has our start time). */
  private async createOwn(scope: TenantScope, fresh: Call): Promise<boolean> {
    try {
      return await this.d.calls.create(scope, fresh);
    } catch (err) {
      const row = await this.d.calls.byId(fresh.id);
      if (row?.status === 'ringing' && row.startedAt.getTime() === fresh.startedAt.getTime()) return true;
      throw err;
    }
  }

  /**
   * Last steps before the carrier; none may leave the row ringing without one (recovery would take it as rung).
   * Dials are dropped before rows are erased, so a dial still held now means any later erasure reads this row.
   */
  private async rang(
    scope: TenantScope,
    q: QueuedDial,
    ringing: Call,
    waitedForLines: boolean,
    fresh: boolean,
  ): Promise<Call | null> {
    // A lead's first attempt rings once: leads allows one dial id per attempt and counts it when allowed.
    this.firstAttemptDecided(q, waitedForLines);
    if (!(await this.stillHeld(scope, q.dialId))) {
      // Gone: its contact forgotten since the claim, or another try dropped it on finding this row.
      const again = await this.d.claims.claim(scope, q.contactId, q.dialId).catch(() => undefined);
      if (again && !again.allowed && again.refusal !== 'already_claimed') {
        // Erased since the claim: its erasure may have read before this row was written.
        if (again.refusal === 'not_found') await this.d.calls.erasePersonalData(scope, ringing.id);
        this.d.metrics?.dials.add(1, { result: again.refusal });
        await this.d.runner.finishRetrying(
          ringing,
          { carrierCallId: '', outcome: 'failed', durationSeconds: 0, cutAtLimit: false },
          'not_dialled',
        );
        return null;
      }
    }
    const logged = (what: string) => (err: unknown) =>
      this.d.log.warn({ err, callId: ringing.id }, `${what} failed; the call rings all the same`);
    for (const change of fresh ? (['call.started', 'call.ringing'] as const) : (['call.ringing'] as const))
      await this.d.runner.announce(ringing, change).catch(logged(change));
    this.d.queue.remove(scope, q.dialId);
    this.d.metrics?.dials.add(1, { result: 'dialled' });
    return ringing;
  }

  /** Whether the dial is still held: by its offset here, or from the dial queue while it is there. */
  private async stillHeld(scope: TenantScope, dialId: string): Promise<boolean> {
    if (!this.d.queue.has(scope, dialId)) return false;
    if (this.d.queue.byOffset(scope, dialId) || !this.d.spill) return true;
    return this.d.spill.has(scope, dialId).catch(() => true);
  }

  /** No credit: the call ends failed so the tenant reads why; unless `written`, its row is first written queued. */
  private async refuseForCredit(
    scope: TenantScope,
    q: QueuedDial,
    call: Call,
    waitedForLines: boolean,
    written: boolean,
  ): Promise<null> {
    if (written || (await this.d.calls.create(scope, call))) {
      this.d.metrics?.dials.add(1, { result: 'insufficient_credits' });
      this.firstAttemptDecided(q, waitedForLines);
      if (!written) await this.d.runner.announce(call, 'call.started');
      await this.d.runner.finish(
        call,
        { carrierCallId: '', outcome: 'failed', durationSeconds: 0, cutAtLimit: false },
        'insufficient_credits',
      );
    }
    this.d.queue.remove(scope, q.dialId);
    return null;
  }

  /** Records a lead's first-attempt delay for its SLO; `waitedForLines` (all lines busy) is not counted late. */
  private firstAttemptDecided(q: QueuedDial, waitedForLines: boolean): void {
    if (q.attempt !== 1 || !q.requestedAt) return;
    const now = this.d.now();
    this.d.metrics?.dialDelay?.record(Math.max(0, now.getTime() - q.requestedAt.getTime()) / 1000, {
      waited_for_lines: waitedForLines ? 'true' : 'false',
    });
    const key = `${q.tenantId} ${q.dialId}`;
    this.firstDials?.done(key, q.requestedAt, now, {}, waitedForLines && !this.triedAndFailed.delete(key));
  }

  private async drop(scope: TenantScope, q: QueuedDial, callId: string, call: Call | null): Promise<void> {
    // An earlier try's queued row is ended, so the feed never shows it queued for ever (and its hold is released).
    if (call?.status === 'queued')
      await this.d.runner.finish(
        call,
        { carrierCallId: '', outcome: 'failed', durationSeconds: 0, cutAtLimit: false },
        'not_dialled',
      );
    this.d.queue.remove(scope, q.dialId);
    // The line stays with a call another try is carrying.
    if (!call || !['ringing', 'in_progress'].includes(call.status)) await this.d.lines.free(scope, callId);
  }
}
