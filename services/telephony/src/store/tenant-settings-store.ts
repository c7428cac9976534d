import { TenantKeyed, type TenantScope } from '@voiceapi/kit';
import { Schema, type Connection } from 'mongoose';

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
  private readonly settings: TenantKeyed<SettingsDoc>;

  constructor(
    conn: Connection,
    private readonly defaultMax: number,
  ) {
    this.settings = new TenantKeyed(conn.models.TenantSettings ?? conn.model<SettingsDoc>('TenantSettings', settingsSchema));
  }

  /** A package set (raised, maybe): wakes the dispatcher for the tenant's backlog. */
  changes() {
    return this.settings.changes(['insert', 'update']);
  }

  async maxConcurrentCalls(scope: TenantScope): Promise<number> {
    return (await this.settings.get(scope))?.maxConcurrentCalls ?? this.defaultMax;
  }

  async setMaxConcurrentCalls(scope: TenantScope, max: number, now: Date): Promise<number> {
    await this.settings.upsert(scope, { $set: { maxConcurrentCalls: max, updatedAt: now } });
    return max;
  }
}
