import { type TenantScope } from '@voiceapi/kit/grpc';
import { modelOf, stringIds, TenantCollection, type QueryShape } from '@voiceapi/kit/mongo';
import { Coalescer } from '@voiceapi/kit/work';
import { LRUCache } from 'lru-cache';
import { Schema, type Connection } from 'mongoose';

/** A line in use: one per call in progress, numbered below the tenant's concurrency limit. */
export interface Line {
  /** `<tenantId>:<n>`, n < the limit when taken: two calls can never hold the same line. */
  id: string;
  tenantId: string;
  callId: string;
  takenAt: Date;
}

interface LineDoc extends Omit<Line, 'id'> {
  _id: string;
}

export const lineSchema = new Schema<LineDoc>(
  {
    _id: String,
    tenantId: { type: String, required: true },
    callId: { type: String, required: true },
    takenAt: { type: Date, required: true },
  },
  { collection: 'lines', versionKey: false },
);
// Serves `tenant` (lines a tenant holds) and `call` (freeing a call's line).
lineSchema.index({ tenantId: 1, callId: 1 });
export const lineQueryShapes: QueryShape[] = [
  { name: 'tenant', equality: ['tenantId'] },
  { name: 'call', equality: ['tenantId', 'callId'] },
];
/** Lines the recovery reads at once (walking the primary key). */
const LINE_PAGE = 500;
/** Tenants whose lines this process remembers (past it, the least recently used is forgotten). */
const MAX_KNOWN_TENANTS = 10_000;

/**
 * The tenant's concurrency package as lines: taking one is an atomic insert of `<tenant>:<n>`, n below the limit,
 * so however many replicas dial or answer at once, no more calls are in progress than the limit.
 */
export class LineStore {
  private readonly lines: TenantCollection<LineDoc, string>;
  /** Each tenant's lines as last known, so a take need not read them first; only a hint (the insert decides). */
  private readonly known = new LRUCache<string, Line[]>({ max: MAX_KNOWN_TENANTS });

  /** Lines of calls ending together, freed in one delete (a call id names one call of one tenant). */
  private readonly frees = new Coalescer<{ tenantId: string; callId: string }, void>(async (lines) => {
    await this.lines
      .crossTenant('the lines of calls ending together are freed in one write, each under its tenant')
      .deleteMany({
        tenantId: { $in: [...new Set(lines.map((l) => l.tenantId))] },
        callId: { $in: lines.map((l) => l.callId) },
      });
    return lines.map(() => undefined);
  });

  constructor(conn: Connection) {
    this.lines = new TenantCollection(modelOf(conn, 'Line', lineSchema), stringIds, lineQueryShapes);
  }

  /** A line freed (a call ended, on whichever replica ran it): wakes the dispatcher for the tenant's backlog. */
  changes() {
    return this.lines.changes(['delete']);
  }

  async held(scope: TenantScope): Promise<Line[]> {
    return (await this.lines.find(scope, {})).map(toLine);
  }

  /** Every line of every tenant (recovery), read in pages along the primary key. */
  async all(): Promise<Line[]> {
    const out: Line[] = [];
    for await (const page of this.lines
      .crossTenant('recovery frees the lines of calls that ended unseen, whoever holds them')
      .pages({}, LINE_PAGE)) {
      out.push(...page.map(toLine));
    }
    return out;
  }

  /** Takes a free line below `limit`, false if all are busy; `held` (else remembered lines) may be stale. */
  async take(scope: TenantScope, callId: string, limit: number, now: Date, held?: Line[]): Promise<boolean> {
    if (held) return this.takeFrom(scope, held, callId, limit, now);
    const remembered = this.known.get(scope.tenantId);
    if (remembered && (await this.takeFrom(scope, remembered, callId, limit, now))) return true;
    const fresh = await this.held(scope);
    this.known.set(scope.tenantId, fresh);
    return this.takeFrom(scope, fresh, callId, limit, now);
  }

  /** `take` for several calls in one write (a dispatch pass): the calls that got a line; refused ones try again. */
  async takeMany(
    scope: TenantScope,
    callIds: readonly string[],
    limit: number,
    now: Date,
    held: Line[],
  ): Promise<Set<string>> {
    const taken = new Set(callIds.filter((c) => held.some((l) => l.callId === c)));
    let waiting = callIds.filter((c) => !taken.has(c));
    // Each round counts its refused lines as busy, so the rounds end by the time every line is. Distinct lines count:
    // a remembered list is shared by the takes under way, and two may have met the same line.
    for (;;) {
      const busy = new Set(held.map((l) => l.id));
      if (waiting.length === 0 || busy.size >= limit) break;
      const first = Math.floor(Math.random() * limit);
      const free: string[] = [];
      // Lines above a lowered limit still count until their calls end.
      const room = Math.min(waiting.length, limit - busy.size);
      for (let i = 0; i < limit && free.length < room; i++) {
        const id = `${scope.tenantId}:${(first + i) % limit}`;
        if (!busy.has(id)) free.push(id);
      }
      if (free.length === 0) break;
      const tries = free.map((id, i) => ({ _id: id, callId: waiting[i]!, takenAt: now }));
      const refused = new Set(await this.lines.insertNew(scope, tries));
      tries.forEach((t, i) => {
        // A refused line is another call's now: it counts as busy from here on.
        held.push({ id: t._id, tenantId: scope.tenantId, callId: refused.has(i) ? '' : t.callId, takenAt: now });
        if (!refused.has(i)) taken.add(t.callId);
      });
      waiting = waiting.filter((c) => !taken.has(c));
    }
    return taken;
  }

  /** Takes start at random lines, so they seldom collide; a collision moves on to the next free line. */
  private async takeFrom(scope: TenantScope, lines: Line[], callId: string, limit: number, now: Date) {
    return (await this.takeMany(scope, [callId], limit, now, lines)).has(callId);
  }

  async free(scope: TenantScope, callId: string): Promise<void> {
    await this.frees.run({ tenantId: scope.tenantId, callId });
    const remembered = this.known.get(scope.tenantId);
    if (remembered)
      this.known.set(
        scope.tenantId,
        remembered.filter((l) => l.callId !== callId),
      );
  }
}

const toLine = (d: LineDoc): Line => ({ id: d._id, tenantId: d.tenantId, callId: d.callId, takenAt: d.takenAt });
