import type { QueuedDial } from '../domain/dial';

/*
 * What the dialer remembers between dispatch passes, so that a backlog costs no read of the whole
 * queue per dial queued or per line freed (a range read with a limit walks the whole range on some
 * stores). Each is a shortcut over the queue, never the truth: every one has a time limit after
 * which the queue is read again, so a wrong memory costs a delay, never a lost or doubled dial
 * (leads allows each dial id once).
 */

/** The longest the tenants waiting are taken from memory (a safety net, as the worker's timer is). */
const KNOWN_TENANTS_MS = 5_000;
/** Due dials read beyond a tenant's lines, handed to its lines as they free up without another read. */
export const READ_AHEAD = 100;
/** The longest a read-ahead is served from memory (a safety net: a dial dropped by another replica is refused by leads). */
const READ_AHEAD_MS = 5_000;
/** How long a tenant's full lines are remembered once its queue is empty (for its last dials still being placed). */
const LINES_FULL_MEMORY_MS = 10 * 60_000;

/**
 * The tenants with waiting dials, as last read. Invariant: kept only while no dial was queued
 * for a tenant outside them since the read (`noteQueued` counts those), and for at most
 * `KNOWN_TENANTS_MS`; a tenant found with nothing due drops it (`forget`).
 */
export class WaitingTenants {
  /** Dials queued for a tenant not among those known, since this process started (by any replica). */
  private queuedElsewhere = 0;
  private known: { tenants: Set<string>; queuedElsewhere: number; at: number } | undefined;
  /** The tenants of the dials queued while the tenants waiting are being read. */
  private queuedDuringRead: Set<string> | undefined;

  noteQueued(tenantId: string): void {
    this.queuedDuringRead?.add(tenantId);
    // Only a tenant not yet among those waiting changes them: the next pass reads them again.
    if (!this.known?.tenants.has(tenantId)) this.queuedElsewhere++;
  }

  forget(): void {
    this.known = undefined;
  }

  async read(nowMs: number, fromQueue: () => Promise<string[]>): Promise<string[]> {
    if (this.known?.queuedElsewhere === this.queuedElsewhere && nowMs - this.known.at < KNOWN_TENANTS_MS)
      return [...this.known.tenants];
    // A dial queued while the read runs may be missing from it: its tenant is added. (Reading again
    // for it instead would read again after every read while a backlog is ingested.)
    const queuedDuringRead = new Set<string>();
    this.queuedDuringRead = queuedDuringRead;
    let read: string[];
    try {
      read = await fromQueue();
    } finally {
      this.queuedDuringRead = undefined;
    }
    const tenants = new Set([...read, ...queuedDuringRead]);
    this.known = { tenants, queuedElsewhere: this.queuedElsewhere, at: nowMs };
    return [...tenants];
  }
}

/** A tenant's due dials as last read, oldest due first, less those handed to lines since. */
export interface ReadAhead {
  dials: QueuedDial[];
  /** The read stopped at its size: more may be due behind these. */
  more: boolean;
  at: number;
}

/**
 * Each tenant's read-ahead. Invariant: it stays the front of the tenant's due dials while it is
 * served: a dial queued later is due later (queued due now, after everything read), a dial handed
 * to a line leaves it, one postponed was handed out first, and a cancelled contact's leave it
 * (`dropContact`). Served for at most `READ_AHEAD_MS`; kept only for tenants still waiting.
 */
export class ReadAheads {
  private readonly byTenant = new Map<string, ReadAhead>();

  /** The tenant's read-ahead while it has dials and is fresh; undefined when it must be read again. */
  fresh(tenantId: string, nowMs: number): ReadAhead | undefined {
    const kept = this.byTenant.get(tenantId);
    return kept && kept.dials.length > 0 && nowMs - kept.at < READ_AHEAD_MS ? kept : undefined;
  }

  set(tenantId: string, read: ReadAhead): void {
    this.byTenant.set(tenantId, read);
  }

  dropContact(tenantId: string, contactId: string): void {
    const ahead = this.byTenant.get(tenantId);
    if (ahead) ahead.dials = ahead.dials.filter((q) => q.contactId !== contactId);
  }

  keepOnly(waiting: ReadonlySet<string>): void {
    for (const tenantId of this.byTenant.keys()) if (!waiting.has(tenantId)) this.byTenant.delete(tenantId);
  }
}

/**
 * When each tenant last had due dials and every line of its concurrency package busy. A lead that
 * waited for the tenant's own lines is not late by the platform's doing: the lead-to-dial SLO
 * leaves those out (`waited_for_lines`). Kept `LINES_FULL_MEMORY_MS` after the tenant's queue
 * empties, for the dials it took last that are still being placed.
 */
export class LinesFull {
  private readonly at = new Map<string, number>();

  mark(tenantId: string, nowMs: number): void {
    this.at.set(tenantId, nowMs);
  }

  /** When the tenant's lines were last found full (0: never). */
  lastAt(tenantId: string): number {
    return this.at.get(tenantId) ?? 0;
  }

  prune(waiting: ReadonlySet<string>, nowMs: number): void {
    for (const [tenantId, at] of this.at)
      if (!waiting.has(tenantId) && nowMs - at > LINES_FULL_MEMORY_MS) this.at.delete(tenantId);
  }
}

/**
 * Whether a dial queued or a line freed calls for a pass. Invariants: `saturated` holds only the
 * tenants the last pass left with dials waiting and every line taken, so a dial queued for one of
 * them calls for no pass (a freed line does); while a pass runs, or after one that may have left
 * dials waiting, a freed line calls for one (`waitingForLines`).
 */
export class PassSignals {
  private passing = false;
  private leftWaiting = true;
  private saturated = new Set<string>();
  /** A dial was queued since the dispatcher last asked that a pass may start now. */
  private queuedForPass = false;

  get waitingForLines(): boolean {
    return this.passing || this.leftWaiting;
  }

  noteQueued(tenantId: string): void {
    // A pass under way may free the tenant's lines or leave some free: only its end says.
    if (!this.passing && this.saturated.has(tenantId)) return;
    this.queuedForPass = true;
  }

  takeQueued(): boolean {
    const wanted = this.queuedForPass;
    this.queuedForPass = false;
    return wanted;
  }

  /** Until the pass ends well, it is assumed to leave dials waiting. */
  passStarted(): void {
    this.passing = true;
    this.leftWaiting = true;
  }

  passEnded(outcome?: { leftWaiting: boolean; saturated: Set<string> }): void {
    this.passing = false;
    if (!outcome) return;
    this.leftWaiting = outcome.leftWaiting;
    this.saturated = outcome.saturated;
  }
}
