import { Schema, type Connection, type Model } from 'mongoose';

interface SettingsDoc {
  /** The tenant id: read by `_id` alone. */
  _id: string;
  maxConcurrentCalls: number;
  updatedAt: Date;
}

export const settingsSchema = new Schema<SettingsDoc>(
  { _id: String, maxConcurrentCalls: { type: Number, required: true }, updatedAt: { type: Date, required: true } },
  { collection: 'tenant_settings', versionKey: false },
);

/** Each tenant's concurrency package; tenants without one get the default. */
export class TenantSettingsStore {
  private readonly model: Model<SettingsDoc>;

  constructor(
    conn: Connection,
    private readonly defaultMax: number,
  ) {
    this.model = conn.models.TenantSettings ?? conn.model<SettingsDoc>('TenantSettings', settingsSchema);
  }

  async maxConcurrentCalls(tenantId: string): Promise<number> {
    const doc = await this.model.findById(tenantId).lean<SettingsDoc>();
    return doc?.maxConcurrentCalls ?? this.defaultMax;
  }

  async setMaxConcurrentCalls(tenantId: string, max: number, now: Date): Promise<number> {
    await this.model.updateOne({ _id: tenantId }, { $set: { maxConcurrentCalls: max, updatedAt: now } }, { upsert: true });
    return max;
  }
}
