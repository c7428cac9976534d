// Over 300 lines because it keeps the dispatch pass and the placing of a dial together (what is remembered between passes is in dispatch-memory.ts).
import { scopeOfRecord, type Logger, type TenantScope, type TypedCounter, type TypedHistogram } from '@voiceapi/kit';
import { outboundCallId, type Call } from '../domain/call';
import type { CallStore } from '../store/call-store';
import type { DialQueueStore } from '../store/dial-queue-store';
import type { QueuedDial } from '../domain/dial';
import type { LineStore } from '../store/line-store';
import type { TenantSettingsStore } from '../store/tenant-settings-store';
import type { CallRunner } from './call-runner';
import { LinesFull, PassSignals, READ_AHEAD, ReadAheads, WaitingTenants, type ReadAhead } from './dispatch-memory';
import type { DialClaims } from './ports';

/** How long a dial waits when leads or billing could not answer. */
const RETRY_MS = 5_000;

export interface DialerDeps {
  queue: DialQueueStore;
  calls: CallStore;
  lines: LineStore;
  settings: TenantSettingsStore;
  claims: DialClaims;
  runner: CallRunner;
  log: Logger;
  now: () => Date;
  /** What a campaign without a number of its own calls from. */
  platformNumber: string;
  /** Asks for a dispatch pass in `ms` (a postponed dial falls due then). */
  wakeIn: (ms: number) => void;
  metrics?: {
    dials: TypedCounter<{ result: string }>;
    /** From the moment a lead could be dialled (its dial requested) to its first call ringing, in seconds. */
    dialDelay?: TypedHistogram<{ waited_for_lines: 'true' | 'false' }>;
    /** Tries to place a lead's first attempt that failed on the platform's side (leads or billing unreachable; tried again). */
    firstDialTriesFailed?: TypedCounter<Record<string, never>>;
  };
}

/**
 * Turns dial requests into calls. Requests are queued durably (a redelivery finds itself queued);
 * one replica (a lease) dispatches them to free lines of each tenant's concurrency package. Each
 * dial is claimed with leads first (the checks again: a contact cancelled, opted out or put on a
 * do-not-call list since ingest is never dialled), gets its hold, then its call row, written
 * ringing (its id follows from the dial id, so the row's insert admits one try only), and rings.
 */
export class Dialer {
  private readonly inFlight = new Map<string, Promise<void>>();
  /** Where the next pass starts in the list of tenants, so none is always served first. */
  private turn = 0;
  /** What the dialer remembers between passes (dispatch-memory.ts: each with its invariant). */
  private readonly signals = new PassSignals();
  private readonly waiting = new WaitingTenants();
  private readonly ahead = new ReadAheads();
  private readonly linesFull = new LinesFull();

  constructor(private readonly d: DialerDeps) {}

  /** Drops the waiting dials of a contact that was cancelled or erased (idempotent). */
  async forgetContact(scope: TenantScope, contactId: string): Promise<void> {
    const dropped = await this.d.queue.removeContact(scope, contactId);
    this.ahead.dropContact(scope.tenantId, contactId);
    if (dropped > 0) this.d.metrics?.dials.add(dropped, { result: 'contact_gone' });
  }

  /** Accepts a dial request (idempotent by dial id); the queued dial wakes the dispatcher (a change stream). */
  async enqueue(scope: TenantScope, req: Omit<QueuedDial, 'tenantId' | 'queuedAt' | 'notBefore'>): Promise<void> {
    const now = this.d.now();
    await this.d.queue.add(scope, { ...req, queuedAt: now, notBefore: now });
  }

  /** Waits for dials being set up (calls already ringing run on; recovery finishes them if this process ends first). */
  async drain(): Promise<void> {
    await Promise.allSettled(this.inFlight.values());
  }

  isDispatching(dialId: string): boolean {
    return this.inFlight.has(dialId);
  }

  /**
   * Whether a line freed now could start a waiting dial: the last pass left a tenant with dials
   * and no free line (or may have), or a pass is under way and may yet. When not, the queue is
   * served to the end and a freed line is no reason for a pass (a queued dial is).
   */
  get waitingForLines(): boolean {
    return this.signals.waitingForLines;
  }

  /**
   * A dial was queued for this tenant (by any replica). Unless the tenant is waiting for a line
   * already, the next pass reads the tenants waiting again, and a pass is called for (`takeQueued`).
   */
  noteQueued(tenantId: string): void {
    this.waiting.noteQueued(tenantId);
    this.signals.noteQueued(tenantId);
  }

  /** Whether the dials queued since the last call call for a pass. */
  takeQueued(): boolean {
    return this.signals.takeQueued();
  }

  /**
   * One pass: every tenant with waiting dials, in turn, gets its due dials (longest due first)
   * onto its own free lines. A tenant's backlog waits for that tenant's lines only, so it never
   * delays another tenant's calls; dials not yet due are not read at all.
   */
  async dispatch(): Promise<number> {
    this.signals.passStarted();
    let outcome: { started: number; leftWaiting: boolean; saturated: Set<string> } | undefined;
    try {
      outcome = await this.dispatchOnce();
      return outcome.started;
    } finally {
      this.signals.passEnded(outcome);
    }
  }

  private async dispatchOnce(): Promise<{ started: number; leftWaiting: boolean; saturated: Set<string> }> {
    const now = this.d.now();
    const tenants = await this.waiting.read(now.getTime(), () => this.d.queue.tenantsWaiting());
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
      const ahead = await this.dueAhead(scope, now, limit);
      const dials = ahead.dials.slice(0, free);
      // Their lines in one write; a dial whose line another replica took waits for the next pass.
      const callIds = dials.map((q) => outboundCallId(tenantId, q.dialId));
      const taken = await this.d.lines.takeMany(scope, callIds, limit, now, held);
      ahead.dials = ahead.dials.filter((q) => !taken.has(outboundCallId(tenantId, q.dialId)));
      // Dials read and left without a line, or more due than read.
      if (ahead.dials.length > 0 || ahead.more) {
        leftWaiting = true;
        if (held.length + taken.size >= limit) {
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
    const waiting = new Set(tenants);
    this.ahead.keepOnly(waiting);
    this.linesFull.prune(waiting, now.getTime());
    // Only tenants left waiting are saturated, so a freed line of theirs wakes a pass (`waitingForLines`).
    return { started, leftWaiting, saturated };
  }

  /** The tenant's read-ahead, read again when spent or stale. */
  private async dueAhead(scope: TenantScope, now: Date, limit: number): Promise<ReadAhead> {
    const kept = this.ahead.fresh(scope.tenantId, now.getTime());
    if (kept) return kept;
    // Dials being set up hold lines and are still queued (up to `limit` of them): read past them.
    const size = limit + READ_AHEAD;
    const due = await this.d.queue.due(scope, now, size);
    // Nothing due: its dials may be later ones (postponed), or gone; the next pass asks the queue.
    if (due.length === 0) this.waiting.forget();
    const read = {
      dials: due.filter((q) => !this.inFlight.has(q.dialId)),
      more: due.length >= size,
      at: now.getTime(),
    };
    this.ahead.set(scope.tenantId, read);
    return read;
  }

  private async place(scope: TenantScope, q: QueuedDial, callId: string, waitedForLines: boolean): Promise<void> {
    let ringing: Call | null = null;
    try {
      ringing = await this.prepare(scope, q, callId, waitedForLines);
    } catch (err) {
      // Leads or billing could not answer: the request waits and is tried again.
      this.d.log.warn({ err, dialId: q.dialId }, 'dial could not be prepared; retrying later');
      if (q.attempt === 1 && q.requestedAt) this.d.metrics?.firstDialTriesFailed?.add(1, {});
      // Either may fail too while the store is away: the dial is then still due and taken again
      // on its own line (the same call id), and recovery frees a line left behind.
      await this.d.lines.free(scope, callId).catch(() => undefined);
      await this.d.queue.postpone(scope, q.dialId, new Date(this.d.now().getTime() + RETRY_MS)).catch(() => undefined);
      this.d.wakeIn(RETRY_MS);
      return;
    }
    if (!ringing) return;
    // The call runs on its own; the dispatcher is done with this request.
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
    // Leads allows a dial id once: a try that is allowed is the first to get this far, so no
    // earlier try wrote its row (rows are written only after a claim). Only a repeat reads it.
    let call = claim.allowed ? null : await this.d.calls.byId(callId);
    if (!claim.allowed && !(claim.refusal === 'already_claimed' && (!call || call.status === 'queued'))) {
      // Refused (leads moved the contact on), or claimed and carried by an earlier try.
      this.d.metrics?.dials.add(1, { result: claim.refusal });
      this.firstAttemptDecided(q, waitedForLines);
      await this.drop(scope, q, callId, call);
      return null;
    }
    if (!call) {
      // No row yet: the first try, or an earlier one that died before writing it (`already_claimed`).
      // The hold first (idempotent by call id), then the row written ringing: its insert admits one
      // try only, and one write stands for queued and ringing (decision 0145).
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
      await this.d.queue.remove(scope, q.dialId);
      return null;
    }
    return this.rang(scope, q, ringing, waitedForLines, false);
  }

  /**
   * Writes the row; true when this try's insert wrote it. An insert answered with an error may
   * have been applied: the row is then this try's if it is the one it wrote (its own start time).
   */
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
   * The row says ringing: the last steps before the carrier is asked, none of which may leave it
   * ringing without a carrier (recovery would finish it as if it had rung). First the check that the
   * contact was not cancelled or erased since the claim: telephony drops a contact's dials when it
   * hears of either, then erases its rows, so a dial still queued now (after the row was written)
   * means any erasure after this reads the row. Then the announcements (`fresh`: `call.started` too,
   * with the row as it reads, ringing, as an inbound call's) and the dial's removal, each only
   * logged if it fails.
   */
  private async rang(
    scope: TenantScope,
    q: QueuedDial,
    ringing: Call,
    waitedForLines: boolean,
    fresh: boolean,
  ): Promise<Call | null> {
    // A lead's first attempt rings once: leads allows one dial id per attempt, and counts the attempt when it allows it.
    this.firstAttemptDecided(q, waitedForLines);
    if (!(await this.d.queue.stillQueued(scope, q.dialId).catch(() => true))) {
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
    // A dial left queued is dropped by its next try, which finds this row.
    await this.d.queue.remove(scope, q.dialId).catch(logged("the dial's removal"));
    this.d.metrics?.dials.add(1, { result: 'dialled' });
    return ringing;
  }

  /**
   * No credit for the call's hold: the call ends failed, so the tenant reads why, and the dial is
   * done. `written`: the row exists (queued); else it is written queued first, unless another try
   * wrote one meanwhile (that try carries it, and counts it).
   */
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
    await this.d.queue.remove(scope, q.dialId);
    return null;
  }

  /**
   * A lead's first attempt is decided: it rings, or it ends for the tenant's reasons (the contact
   * moved on, no credit). The delay since the lead could be dialled is the lead-to-dial SLO's;
   * `waitedForLines`: an earlier pass found every line of the tenant's package busy after the lead
   * could be dialled (the SLO does not count such a lead late).
   */
  private firstAttemptDecided(q: QueuedDial, waitedForLines: boolean): void {
    if (q.attempt !== 1 || !q.requestedAt) return;
    this.d.metrics?.dialDelay?.record(Math.max(0, this.d.now().getTime() - q.requestedAt.getTime()) / 1000, {
      waited_for_lines: waitedForLines ? 'true' : 'false',
    });
  }

  private async drop(scope: TenantScope, q: QueuedDial, callId: string, call: Call | null): Promise<void> {
    // A row an earlier try wrote is ended, so the feed never shows a call queued for ever (and
    // billing releases any hold that try placed).
    if (call?.status === 'queued')
      await this.d.runner.finish(
        call,
        { carrierCallId: '', outcome: 'failed', durationSeconds: 0, cutAtLimit: false },
        'not_dialled',
      );
    await this.d.queue.remove(scope, q.dialId);
    // The line stays with a call another try is carrying.
    if (!call || !['ringing', 'in_progress'].includes(call.status)) await this.d.lines.free(scope, callId);
  }
}
