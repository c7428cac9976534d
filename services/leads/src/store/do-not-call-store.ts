import { isDuplicateKeyError, platformModel, stringIds, TenantCollection, type TenantScope } from '@voiceapi/kit';
import { Schema, type Connection, type Model } from 'mongoose';
import type { DoNotCallList, DoNotCallEntry } from '../domain/do-not-call';

interface TenantEntryDoc {
  /** `<tenantId>:<e164>`: every check is one lookup by `_id`. */
  _id: string;
  tenantId: string;
  phone: string;
  source: string;
  createdAt: Date;
}

interface PlatformEntryDoc {
  /** The E.164 number. */
  _id: string;
  source: string;
  createdAt: Date;
}

const tenantSchema = new Schema<TenantEntryDoc>(
  { _id: String, tenantId: { type: String, required: true }, phone: { type: String, required: true }, source: { type: String, required: true }, createdAt: { type: Date, required: true } },
  { collection: 'do_not_call_tenant', versionKey: false },
);
// No secondary index: looked up by _id alone.
const platformSchema = new Schema<PlatformEntryDoc>(
  { _id: String, source: { type: String, required: true }, createdAt: { type: Date, required: true } },
  { collection: 'do_not_call_platform', versionKey: false },
);

const tenantKey = (tenantId: string, phone: string) => `${tenantId}:${phone}`;

/** The tenant's and the platform's do-not-call lists. Entries are never removed by this service. */
export class DoNotCallStore {
  private readonly tenant: TenantCollection<TenantEntryDoc, string>;
  private readonly platform: Model<PlatformEntryDoc>;

  constructor(conn: Connection) {
    this.tenant = new TenantCollection(conn.models.DoNotCallTenant ?? conn.model<TenantEntryDoc>('DoNotCallTenant', tenantSchema), stringIds, []);
    this.platform = platformModel(conn.models.DoNotCallPlatform ?? conn.model<PlatformEntryDoc>('DoNotCallPlatform', platformSchema), 'the platform\'s own do-not-call list applies to every tenant');
  }

  /** Which lists hold the number (both looked up at once). */
  async check(scope: TenantScope, phone: string): Promise<{ tenant: boolean; platform: boolean }> {
    const [t, p] = await Promise.all([this.tenant.findById(scope, tenantKey(scope.tenantId, phone), { _id: 1, tenantId: 1 }), this.platform.exists({ _id: phone })]);
    return { tenant: t !== null, platform: p !== null };
  }

  /** Adds the number; `created` is false when it was on the list already (the first entry is kept). */
  async addTenant(scope: TenantScope, phone: string, source: string, now: Date): Promise<{ entry: DoNotCallEntry; created: boolean }> {
    try {
      await this.tenant.insert(scope, { _id: tenantKey(scope.tenantId, phone), phone, source, createdAt: now });
      return { entry: { phone, list: 'tenant', source, createdAt: now }, created: true };
    } catch (err) {
      if (!isDuplicateKeyError(err)) throw err;
      const doc = await this.tenant.findById(scope, tenantKey(scope.tenantId, phone));
      return { entry: { phone, list: 'tenant', source: doc?.source ?? source, createdAt: doc?.createdAt ?? now }, created: false };
    }
  }

  async addPlatform(phone: string, source: string, now: Date): Promise<{ entry: DoNotCallEntry; created: boolean }> {
    try {
      await this.platform.create({ _id: phone, source, createdAt: now });
      return { entry: { phone, list: 'platform', source, createdAt: now }, created: true };
    } catch (err) {
      if (!isDuplicateKeyError(err)) throw err;
      const doc = await this.platform.findById(phone).lean<PlatformEntryDoc>();
      return { entry: { phone, list: 'platform', source: doc?.source ?? source, createdAt: doc?.createdAt ?? now }, created: false };
    }
  }
}
