// What the dialer remembers between passes: when tenants' lines were last full, and whether a pass is called for.

/** How long a tenant's full lines are remembered once its queue is empty (for its last dials still being placed). */
const LINES_FULL_MEMORY_MS = 10 * 60_000;

/**
 * When each tenant last had due dials and every line busy: the lead-to-dial SLO leaves out leads that waited for
 * their tenant's own lines (`waited_for_lines`).
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
 * Whether a queued dial or a freed line calls for a pass. `saturated`: tenants the last pass left with dials and no
 * free line (a dial queued for one calls for no pass); a freed line does while a pass runs or may have left dials.
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
