import { modelOf, ReadCache, TenantKeyed, type Logger, type TenantScope } from '@voiceapi/kit';
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
 * Each tenant's concurrency package; tenants without one get the default. Read by every dispatch
 * pass and every inbound call, so answered from a cache that forgets everything when any replica
 * sets a package (a change stream); the lines still enforce whatever limit was read (a line is an
 * insert below it). The process starts and stops `cache`.
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

  /**
   * A package set (raised, maybe) by any replica, told once the cache has forgotten the old one:
   * the dispatcher, woken by it, reads the new package.
   */
  onChange(listener: () => void): void {
    this.cache.onChange(listener);
  }

  /** The package, from memory when it is there. */
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
