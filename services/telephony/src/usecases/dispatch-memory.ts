/*
 * What the dialer remembers between dispatch passes besides the dials it holds: when each tenant's
 * lines were last full, and whether a dial held or a line freed calls for a pass.
 */

/** How long a tenant's full lines are remembered once its queue is empty (for its last dials still being placed). */
const LINES_FULL_MEMORY_MS = 10 * 60_000;

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
