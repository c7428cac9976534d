import type { KeyMode } from '@voiceapi/kit';
import { isObjectIdHex } from '@voiceapi/kit';
import { Schema, Types, type Connection, type Model } from 'mongoose';
import type { Scope } from '../auth/scopes';

export type KeyStatus = 'pending' | 'active' | 'inactive';

export interface ApiKeyRecord {
  _id: Types.ObjectId;
  tenantId: string;
  name: string;
  mode: KeyMode;
  scopes: Scope[];
  status: KeyStatus;
  /** HMAC of the plaintext; the plaintext itself is never stored. */
  keyHash: string;
  keyHint: string;
  purpose?: string;
  rateLimitPerSecond?: number;
  /** The dashboard request this key was approved from, if any. */
  requestId?: string;
  createdAt: Date;
  updatedAt: Date;
  lastUsedAt?: Date;
}

const apiKeySchema = new Schema<ApiKeyRecord>(
  {
    tenantId: { type: String, required: true },
    name: { type: String, required: true },
    mode: { type: String, enum: ['live', 'sandbox'], required: true },
    scopes: { type: [String], required: true },
    status: { type: String, enum: ['pending', 'active', 'inactive'], required: true },
    keyHash: { type: String, required: true },
    keyHint: { type: String, required: true },
    purpose: String,
    rateLimitPerSecond: Number,
    requestId: String,
    createdAt: { type: Date, required: true },
    updatedAt: { type: Date, required: true },
    lastUsedAt: Date,
  },
  { collection: 'api_keys', versionKey: false },
);
// Serves authentication: one lookup by hash on a cache miss.
apiKeySchema.index({ keyHash: 1 }, { unique: true });
// Serves listing a tenant's keys (dashboard).
apiKeySchema.index({ tenantId: 1, createdAt: -1 });

export class ApiKeyStore {
  readonly model: Model<ApiKeyRecord>;
  constructor(conn: Connection) {
    this.model = conn.models.ApiKey ?? conn.model<ApiKeyRecord>('ApiKey', apiKeySchema);
  }

  async insert(doc: Omit<ApiKeyRecord, '_id' | 'createdAt' | 'updatedAt'> & { _id?: Types.ObjectId }): Promise<ApiKeyRecord> {
    const now = new Date();
    return (await this.model.create({ ...doc, createdAt: now, updatedAt: now })).toObject();
  }

  get(id: string): Promise<ApiKeyRecord | null> {
    if (!isObjectIdHex(id)) return Promise.resolve(null);
    return this.model.findById(id).lean<ApiKeyRecord>();
  }

  findByHash(keyHash: string): Promise<ApiKeyRecord | null> {
    return this.model.findOne({ keyHash }).lean<ApiKeyRecord>();
  }

  async update(id: string, changes: { status?: KeyStatus; name?: string }): Promise<ApiKeyRecord | null> {
    if (!isObjectIdHex(id)) return null;
    return this.model
      .findOneAndUpdate({ _id: id }, { $set: { ...changes, updatedAt: new Date() } }, { new: true })
      .lean<ApiKeyRecord>();
  }

  async touch(id: string, at: Date): Promise<void> {
    await this.model.updateOne({ _id: id }, { $set: { lastUsedAt: at } });
  }
}

export const apiKeyJson = (k: ApiKeyRecord) => ({
  id: k._id.toString(),
  tenantId: k.tenantId,
  name: k.name,
  mode: k.mode,
  scopes: k.scopes,
  status: k.status,
  keyHint: k.keyHint,
  purpose: k.purpose ?? null,
  rateLimitPerSecond: k.rateLimitPerSecond ?? null,
  createdAt: k.createdAt.toISOString(),
  lastUsedAt: k.lastUsedAt?.toISOString() ?? null,
});
