import { isObjectIdHex, modelOf, platformModel } from '@voiceapi/kit/mongo';
import { LRUCache } from 'lru-cache';
import { Schema, Types, type Connection, type Model } from 'mongoose';

export interface TenantRecord {
  _id: Types.ObjectId;
  name: string;
  createdAt: Date;
}

const tenantSchema = new Schema<TenantRecord>(
  { name: { type: String, required: true }, createdAt: { type: Date, required: true } },
  { collection: 'tenants', versionKey: false },
);

export class TenantStore {
  readonly model: Model<TenantRecord>;
  /**
   * Tenants seen to exist. A tenant is never deleted, so once seen it exists for good: the
   * operator's calls for a tenant (a simulated call each) read the registry once, not every time.
   */
  private readonly known = new LRUCache<string, true>({ max: 100_000 });

  constructor(conn: Connection) {
    this.model = platformModel(
      modelOf(conn, 'Tenant', tenantSchema),
      "the tenant registry: a tenant's own record, read before any scope exists",
    );
  }

  async create(name: string): Promise<TenantRecord> {
    return (await this.model.create({ name, createdAt: new Date() })).toObject();
  }

  async exists(id: string): Promise<boolean> {
    if (this.known.has(id)) return true;
    const found = isObjectIdHex(id) && (await this.model.exists({ _id: id })) !== null;
    if (found) this.known.set(id, true);
    return found;
  }
}
