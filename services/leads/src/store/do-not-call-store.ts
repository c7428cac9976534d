import { type TenantScope } from '@voiceapi/kit/grpc';
import { isDuplicateKeyError, modelOf, platformModel, stringIds, TenantCollection } from '@voiceapi/kit/mongo';
import { Coalescer } from '@voiceapi/kit/work';
import { Schema, type Connection, type Model } from 'mongoose';
import type { DoNotCallEntry } from '../domain/do-not-call';

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
  {
    _id: String,
    tenantId: { type: String, required: true },
    phone: { type: String, required: true },
    source: { type: String, required: true },
    createdAt: { type: Date, required: true },
  },
  { collection: 'do_not_call_tenant', versionKey: false },
);
// No secondary index: looked up by _id alone.
const platformSchema = new Schema<PlatformEntryDoc>(
  { _id: String, source: { type: String, required: true }, createdAt: { type: Date, required: true } },
  { collection: 'do_not_call_platform', versionKey: false },
);

const tenantKey = (tenantId: string, phone: string) => `${tenantId}:${phone}`;

interface Listed {
  tenant: boolean;
  platform: boolean;
}

/** The tenant's and the platform's do-not-call lists. Entries are never removed by this service. */
export class DoNotCallStore {
  private readonly tenant: TenantCollection<TenantEntryDoc, string>;
  private readonly platform: Model<PlatformEntryDoc>;
  /** Checks asked during a read share the next one, which starts after they were asked: never an older answer. */
  private readonly checks = new Coalescer<{ scope: TenantScope; phone: string }, Listed>(async (asked) => {
    const keys = [...new Set(asked.map((a) => tenantKey(a.scope.tenantId, a.phone)))];
    const phones = [...new Set(asked.map((a) => a.phone))];
    const [onTenant, onPlatform] = await Promise.all([
      this.tenant
        .crossTenant('leads arriving together are checked in one read; each key names its tenant')
        .find({ _id: { $in: keys } })
        .then((docs) => new Set(docs.map((d) => d._id))),
      this.platform
        .find({ _id: { $in: phones } }, { _id: 1 })
        .lean<{ _id: string }[]>()
        .then((docs) => new Set(docs.map((d) => d._id))),
    ]);
    return asked.map((a) => ({
      tenant: onTenant.has(tenantKey(a.scope.tenantId, a.phone)),
      platform: onPlatform.has(a.phone),
    }));
  });

  constructor(conn: Connection) {
    this.tenant = new TenantCollection(modelOf(conn, 'DoNotCallTenant', tenantSchema), stringIds, []);
    this.platform = platformModel(
      modelOf(conn, 'DoNotCallPlatform', platformSchema),
      "the platform's own do-not-call list applies to every tenant",
    );
  }

  /** Which lists hold the number, as of a read that starts after this call. */
  check(scope: TenantScope, phone: string): Promise<Listed> {
    return this.checks.run({ scope, phone });
  }

  /** Adds the number; `created` is false when it was on the list already (the first entry is kept). */
  async addTenant(
    scope: TenantScope,
    phone: string,
    source: string,
    now: Date,
  ): Promise<{ entry: DoNotCallEntry; created: boolean }> {
    try {
      await this.tenant.insert(scope, { _id: tenantKey(scope.tenantId, phone), phone, source, createdAt: now });
      return { entry: { phone, list: 'tenant', source, createdAt: now }, created: true };
    } catch (err) {
      if (!isDuplicateKeyError(err)) throw err;
      const doc = await this.tenant.findById(scope, tenantKey(scope.tenantId, phone));
      return {
        entry: { phone, list: 'tenant', source: doc?.source ?? source, createdAt: doc?.createdAt ?? now },
        created: false,
      };
    }
  }

  async addPlatform(phone: string, source: string, now: Date): Promise<{ entry: DoNotCallEntry; created: boolean }> {
    try {
      await this.platform.create({ _id: phone, source, createdAt: now });
      return { entry: { phone, list: 'platform', source, createdAt: now }, created: true };
    } catch (err) {
      if (!isDuplicateKeyError(err)) throw err;
      const doc = await this.platform.findById(phone).lean<PlatformEntryDoc>();
      return {
        entry: { phone, list: 'platform', source: doc?.source ?? source, createdAt: doc?.createdAt ?? now },
        created: false,
      };
    }
  }
}
