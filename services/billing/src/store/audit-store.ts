import { declareQueries, modelOf, platformModel, upsertManyOnce, type QueryShape } from '@voiceapi/kit/mongo';
import { Schema, type Connection, type Model } from 'mongoose';
import type { AuditMark } from '../domain/ledger-audit';

interface AuditDoc extends AuditMark {
  /** The wallet's tenant id. */
  _id: string;
  auditedAt: Date;
}

export const auditSchema = new Schema<AuditDoc>(
  {
    _id: String,
    seq: { type: Number, required: true },
    rowsSum: { type: Number, required: true },
    balance: { type: Number, required: true },
    unbalanced: { type: Boolean, required: true },
    wrongAt: Number,
    auditedAt: { type: Date, required: true },
  },
  { collection: 'wallet_audits', versionKey: false },
);
// Serves `unbalanced` (the metric's count of wallets found unbalanced); marks are otherwise read by `_id`.
auditSchema.index({ unbalanced: 1 });
export const auditQueryShapes: QueryShape[] = [{ name: 'unbalanced', equality: ['unbalanced'] }];

/**
 * The ledger audit's marks (`wallet_audits`): per wallet, how far its chain was checked, what its
 * rows summed to there and whether that was its balance. One small document per wallet, by tenant id.
 */
export class AuditStore {
  private readonly audits: Model<AuditDoc>;

  constructor(conn: Connection) {
    this.audits = platformModel(
      modelOf(conn, 'WalletAudit', auditSchema),
      "the ledger audit's own bookkeeping across every wallet, never read for a tenant",
    );
    declareQueries(this.audits, auditQueryShapes);
  }

  /** The marks of these wallets, by tenant id (one read). */
  async marks(tenantIds: readonly string[]): Promise<Map<string, AuditMark>> {
    if (tenantIds.length === 0) return new Map();
    const docs = await this.audits.find({ _id: { $in: [...tenantIds] } }).lean<AuditDoc[]>();
    return new Map(
      docs.map(({ _id, seq, rowsSum, balance, unbalanced, wrongAt }) => [
        _id,
        { seq, rowsSum, balance, unbalanced, ...(typeof wrongAt === 'number' && { wrongAt }) },
      ]),
    );
  }

  /** Each mark is self-contained, so one overwritten by an older one (a lease handover) is only rechecked. */
  async save(marks: readonly { tenantId: string; mark: AuditMark }[], at: Date): Promise<void> {
    await upsertManyOnce(
      this.audits,
      marks.map(({ tenantId, mark }) => ({ filter: { _id: tenantId }, update: { $set: { ...mark, auditedAt: at } } })),
      { ordered: false },
    );
  }

  /** How many wallets the audit found unbalanced. */
  unbalanced(): Promise<number> {
    return this.audits.countDocuments({ unbalanced: true }).exec();
  }
}
