import { allByPrimaryKey, declareQueries, isDuplicateKeyError, type QueryShape } from '@voiceapi/kit';
import { Schema, type Connection, type Model } from 'mongoose';

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
  { _id: String, tenantId: { type: String, required: true }, callId: { type: String, required: true }, takenAt: { type: Date, required: true } },
  { collection: 'lines', versionKey: false },
);
// Serves `tenant` (lines a tenant holds) and `call` (freeing a call's line).
lineSchema.index({ tenantId: 1 });
lineSchema.index({ callId: 1 });
export const lineQueryShapes: QueryShape[] = [
  { name: 'tenant', equality: ['tenantId'] },
  { name: 'call', equality: ['callId'] },
];
/** Lines the recovery reads at once (walking the primary key). */
const LINE_PAGE = 500;

/**
 * The tenant's concurrency package as lines. Taking a line is an insert of `<tenant>:<n>` with
 * n below the limit, the one write every store makes atomic, so however many replicas dial or
 * answer at once, no more calls are in progress than the limit. Only calls in progress hold a
 * line, so the collection stays small.
 */
export class LineStore {
  private readonly model: Model<LineDoc>;

  constructor(conn: Connection) {
    this.model = conn.models.Line ?? conn.model<LineDoc>('Line', lineSchema);
    declareQueries(this.model, lineQueryShapes);
  }

  async held(tenantId: string): Promise<Line[]> {
    return (await this.model.find({ tenantId }).lean<LineDoc[]>()).map(toLine);
  }

  /** Every line, read in pages along the primary key. */
  async all(): Promise<Line[]> {
    return (await allByPrimaryKey(this.model, LINE_PAGE)).map(toLine);
  }

  /**
   * Takes a free line below `limit` for the call; false when all are busy. `held` is the
   * tenant's lines as the caller last read them (read here when not given), and gains the line
   * taken: it may be stale, since the insert of a line decides, whoever took it meanwhile.
   */
  async take(tenantId: string, callId: string, limit: number, now: Date, held?: Line[]): Promise<boolean> {
    const lines = held ?? (await this.held(tenantId));
    if (lines.some((l) => l.callId === callId)) return true;
    // Lines above a lowered limit still count until their calls end.
    if (lines.length >= limit) return false;
    const busy = new Set(lines.map((l) => l.id));
    for (let n = 0; n < limit; n++) {
      const id = `${tenantId}:${n}`;
      if (busy.has(id)) continue;
      try {
        await this.model.create({ _id: id, tenantId, callId, takenAt: now });
        lines.push({ id, tenantId, callId, takenAt: now });
        return true;
      } catch (err) {
        if (!isDuplicateKeyError(err)) throw err;
      }
    }
    return false;
  }

  async free(callId: string): Promise<void> {
    await this.model.deleteMany({ callId });
  }
}

const toLine = (d: LineDoc): Line => ({ id: d._id, tenantId: d.tenantId, callId: d.callId, takenAt: d.takenAt });
