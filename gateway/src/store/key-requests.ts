import type { KeyMode } from '@voiceapi/kit';
import { isObjectIdHex } from '@voiceapi/kit';
import { Schema, Types, type Connection, type Model } from 'mongoose';
import type { Scope } from '../auth/scopes';

export type RequestStatus = 'pending' | 'approved' | 'rejected';

export interface KeyRequestRecord {
  _id: Types.ObjectId;
  tenantId: string;
  name: string;
  mode: KeyMode;
  purpose: string;
  scopes: Scope[];
  status: RequestStatus;
  reason?: string;
  apiKeyId?: string;
  createdAt: Date;
  decidedAt?: Date;
}

const keyRequestSchema = new Schema<KeyRequestRecord>(
  {
    tenantId: { type: String, required: true },
    name: { type: String, required: true },
    mode: { type: String, enum: ['live', 'sandbox'], required: true },
    purpose: { type: String, required: true },
    scopes: { type: [String], required: true },
    status: { type: String, enum: ['pending', 'approved', 'rejected'], required: true },
    reason: String,
    apiKeyId: String,
    createdAt: { type: Date, required: true },
    decidedAt: Date,
  },
  { collection: 'api_key_requests', versionKey: false },
);
// Serves the operator's queue: requests by status, oldest first.
keyRequestSchema.index({ status: 1, createdAt: 1 });

export class KeyRequestStore {
  readonly model: Model<KeyRequestRecord>;
  constructor(conn: Connection) {
    this.model = conn.models.KeyRequest ?? conn.model<KeyRequestRecord>('KeyRequest', keyRequestSchema);
  }

  async create(doc: Pick<KeyRequestRecord, 'tenantId' | 'name' | 'mode' | 'purpose' | 'scopes'>): Promise<KeyRequestRecord> {
    return (await this.model.create({ ...doc, status: 'pending', createdAt: new Date() })).toObject();
  }

  list(status?: RequestStatus): Promise<KeyRequestRecord[]> {
    return this.model
      .find(status ? { status } : {})
      .sort({ createdAt: 1 })
      .limit(500)
      .lean<KeyRequestRecord[]>();
  }

  get(id: string): Promise<KeyRequestRecord | null> {
    if (!isObjectIdHex(id)) return Promise.resolve(null);
    return this.model.findById(id).lean<KeyRequestRecord>();
  }

  /** Moves a pending request to a decision atomically: exactly one approve or reject wins. */
  decide(id: string, changes: Partial<KeyRequestRecord> & { status: RequestStatus }): Promise<KeyRequestRecord | null> {
    if (!isObjectIdHex(id)) return Promise.resolve(null);
    return this.model
      .findOneAndUpdate({ _id: id, status: 'pending' }, { $set: { ...changes, decidedAt: new Date() } }, { new: true })
      .lean<KeyRequestRecord>();
  }

  async reopen(id: string): Promise<void> {
    await this.model.updateOne({ _id: id }, { $set: { status: 'pending' }, $unset: { apiKeyId: 1, decidedAt: 1 } });
  }
}

export const keyRequestJson = (r: KeyRequestRecord) => ({
  id: r._id.toString(),
  tenantId: r.tenantId,
  name: r.name,
  mode: r.mode,
  purpose: r.purpose,
  scopes: r.scopes,
  status: r.status,
  reason: r.reason ?? null,
  apiKeyId: r.apiKeyId ?? null,
  createdAt: r.createdAt.toISOString(),
});
