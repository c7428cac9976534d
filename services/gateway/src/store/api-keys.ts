import { type KeyMode, type TenantScope } from '@voiceapi/kit/grpc';
import { modelOf, objectIds, stringIds, TenantCollection, type QueryShape } from '@voiceapi/kit/mongo';
import { Schema, Types, type Connection } from 'mongoose';
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

export const apiKeySchema = new Schema<ApiKeyRecord>(
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
// No secondary index: every lookup is by _id (the key id, or the id the hash leads to).
export const apiKeyQueryShapes: QueryShape[] = [];

/**
 * Authentication's index: the key's hash as `_id`, pointing at the key. A lookup by hash is then
 * a lookup by `_id`, served by the primary key.
 */
interface KeyHashRecord {
  _id: string;
  tenantId: string;
  keyId: string;
}

const keyHashSchema = new Schema<KeyHashRecord>(
  { _id: String, tenantId: { type: String, required: true }, keyId: { type: String, required: true } },
  { collection: 'api_key_hashes', versionKey: false },
);

export type NewApiKey = Omit<ApiKeyRecord, '_id' | 'tenantId' | 'createdAt' | 'updatedAt'> & { _id?: Types.ObjectId };

export class ApiKeyStore {
  private readonly keys: TenantCollection<ApiKeyRecord>;
  private readonly hashes: TenantCollection<KeyHashRecord, string>;

  constructor(conn: Connection) {
    this.keys = new TenantCollection(modelOf(conn, 'ApiKey', apiKeySchema), objectIds, apiKeyQueryShapes);
    this.hashes = new TenantCollection(modelOf(conn, 'ApiKeyHash', keyHashSchema), stringIds, []);
  }

  /** The hash entry goes first: a crash in between leaves a pointer to nothing, never a key no hash finds. */
  async insert(scope: TenantScope, doc: NewApiKey): Promise<ApiKeyRecord> {
    const now = new Date();
    const _id = doc._id ?? new Types.ObjectId();
    await this.hashes.insert(scope, { _id: doc.keyHash, keyId: _id.toString() });
    return this.keys.insert(scope, { ...doc, _id, createdAt: now, updatedAt: now });
  }

  /** Authentication: the key a presented secret hashes to, whichever tenant it belongs to. */
  async findByHash(keyHash: string): Promise<ApiKeyRecord | null> {
    const why = 'authentication finds a key by its hash; the key is what tells the tenant';
    const entry = await this.hashes.crossTenant(why).findById(keyHash);
    if (!entry) return null;
    const key = await this.keys.crossTenant(why).findById(entry.keyId);
    return key && key.tenantId === entry.tenantId && key.keyHash === keyHash ? key : null;
  }

  /** Operators act on any tenant's key by its id. */
  get(id: string): Promise<ApiKeyRecord | null> {
    return this.keys.crossTenant('operators manage keys of every tenant by id').findById(id);
  }

  update(id: string, changes: { status?: KeyStatus; name?: string }): Promise<ApiKeyRecord | null> {
    return this.keys
      .crossTenant('operators manage keys of every tenant by id')
      .updateById(id, { $set: { ...changes, updatedAt: new Date() } });
  }

  async touch(id: string, at: Date): Promise<void> {
    await this.keys
      .crossTenant('the authenticated key records its own use')
      .updateById(id, { $set: { lastUsedAt: at } });
  }
}
