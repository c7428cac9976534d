import { type TenantScope } from '@voiceapi/kit/grpc';
import { modelOf, ReadCache, TenantKeyed } from '@voiceapi/kit/mongo';
import { type Logger } from '@voiceapi/kit/service';
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

/** How long a package read may be served from memory if its change stream missed a change. */
const CACHE_TTL_MS = 60_000;

/**
 * Each tenant's concurrency package (else the default), cached as every pass and inbound call reads it; any
 * replica's change empties the cache, and lines enforce whatever limit was read. The process starts and stops `cache`.
 */
export class TenantSettingsStore {
  private readonly settings: TenantKeyed<SettingsDoc>;
  readonly cache: ReadCache<number>;

  constructor(
    conn: Connection,
    private readonly defaultMax: number,
    log: Logger,
  ) {
    this.settings = new TenantKeyed(modelOf(conn, 'TenantSettings', settingsSchema));
    this.cache = new ReadCache({ source: this.settings.changes(['insert', 'update']), ttlMs: CACHE_TTL_MS, log });
  }

  /** Told once the cache has forgotten a package any replica set, so the woken dispatcher reads the new one. */
  onChange(listener: () => void): void {
    this.cache.onChange(listener);
  }

  async maxConcurrentCalls(scope: TenantScope): Promise<number> {
    // A tenant without a package is cached too (as the default): most tenants have none.
    return (
      (await this.cache.get(
        scope.tenantId,
        async () => (await this.settings.get(scope))?.maxConcurrentCalls ?? this.defaultMax,
      )) ?? this.defaultMax
    );
  }

  async setMaxConcurrentCalls(scope: TenantScope, max: number, now: Date): Promise<number> {
    await this.settings.upsert(scope, { $set: { maxConcurrentCalls: max, updatedAt: now } });
    this.cache.forget(scope.tenantId);
    return max;
  }
}
