import { isObjectIdHex, type TenantScope } from '@voiceapi/kit';
import { Schema, Types, type Connection, type Model } from 'mongoose';

/** A company as the use cases see it. */
export interface CompanyRecord {
  _id: Types.ObjectId;
  tenantId: string;
  name: string;
  mobile?: string;
  countryCode?: string;
  countryIso?: string;
  description?: string;
  industry?: string;
  website?: string;
  businessHours?: Record<string, unknown>;
  timezone?: string;
  /** Email-server and WhatsApp credentials, set by the dashboard. Never selected by this store. */
  omniChannelSettings?: Record<string, unknown>;
  createdAt: Date;
  updatedAt: Date;
}

export type CompanyFields = Omit<CompanyRecord, '_id' | 'tenantId' | 'omniChannelSettings' | 'createdAt' | 'updatedAt'>;
export type CompanyView = Omit<CompanyRecord, 'omniChannelSettings'>;

/**
 * The stored document. Free-form business hours are kept as JSON text: tenants may send any
 * JSON object, and documents cannot hold every JSON shape portably (FerretDB refuses nested
 * arrays; MongoDB treats `$`-prefixed and dotted keys specially).
 */
type CompanyDoc = Omit<CompanyRecord, 'businessHours'> & { businessHours?: string };

const companySchema = new Schema<CompanyDoc>(
  {
    tenantId: { type: String, required: true },
    name: { type: String, required: true },
    mobile: String,
    countryCode: String,
    countryIso: String,
    description: String,
    industry: String,
    website: String,
    businessHours: String,
    timezone: String,
    omniChannelSettings: { type: Schema.Types.Mixed },
    createdAt: { type: Date, required: true },
    updatedAt: { type: Date, required: true },
  },
  { collection: 'companies', versionKey: false, minimize: true },
);
// Serves every tenant query: list newest first, the latest company, and get/update/delete by id
// (the _id index finds the document; tenantId in the filter keeps it the tenant's).
companySchema.index({ tenantId: 1, createdAt: -1, _id: -1 });

// Credentials are excluded by every find; findOneAndUpdate cannot take a projection on FerretDB
// 1.24, so its result goes through toView, which drops them in code.
const PUBLIC_PROJECTION = { omniChannelSettings: 0 } as const;

function toView(doc: CompanyDoc): CompanyView {
  const { omniChannelSettings: _credentials, businessHours, ...view } = doc;
  return businessHours === undefined ? view : { ...view, businessHours: JSON.parse(businessHours) as Record<string, unknown> };
}

function toDoc<F extends Partial<CompanyFields>>(fields: F): Omit<F, 'businessHours'> & { businessHours?: string } {
  const { businessHours, ...rest } = fields;
  return businessHours === undefined ? rest : { ...rest, businessHours: JSON.stringify(businessHours) };
}

export function registerCompanyModel(conn: Connection): Model<CompanyDoc> {
  return conn.models.Company ?? conn.model<CompanyDoc>('Company', companySchema);
}

/**
 * The only way into the companies collection. Every method takes a TenantScope, and every filter
 * is built from it, so a query without a tenant cannot be written here.
 */
export class CompanyStore {
  constructor(private readonly model: Model<CompanyDoc>) {}

  private byId(scope: TenantScope, id: string) {
    return { _id: new Types.ObjectId(id), tenantId: scope.tenantId };
  }

  async create(scope: TenantScope, fields: CompanyFields, now: Date): Promise<CompanyView> {
    const doc = await this.model.create({ ...toDoc(fields), tenantId: scope.tenantId, createdAt: now, updatedAt: now });
    return toView(doc.toObject());
  }

  async get(scope: TenantScope, id: string): Promise<CompanyView | null> {
    if (!isObjectIdHex(id)) return null;
    return this.model.findOne(this.byId(scope, id), PUBLIC_PROJECTION).lean<CompanyDoc>()
      .then((d) => (d ? toView(d) : null));
  }

  async latest(scope: TenantScope): Promise<CompanyView | null> {
    return this.model
      .findOne({ tenantId: scope.tenantId }, PUBLIC_PROJECTION)
      .sort({ createdAt: -1, _id: -1 })
      .lean<CompanyDoc>()
      .then((d) => (d ? toView(d) : null));
  }

  async list(scope: TenantScope, page: number, limit: number): Promise<{ items: CompanyView[]; total: number }> {
    const filter = { tenantId: scope.tenantId };
    const [items, total] = await Promise.all([
      this.model
        .find(filter, PUBLIC_PROJECTION)
        .sort({ createdAt: -1, _id: -1 })
        .skip((page - 1) * limit)
        .limit(limit)
        .lean<CompanyDoc[]>(),
      this.model.countDocuments(filter),
    ]);
    return { items: items.map(toView), total };
  }

  async update(scope: TenantScope, id: string, fields: Partial<CompanyFields>, now: Date): Promise<CompanyView | null> {
    if (!isObjectIdHex(id)) return null;
    const doc = await this.model
      .findOneAndUpdate(this.byId(scope, id), { $set: { ...toDoc(fields), updatedAt: now } }, { new: true })
      .lean<CompanyDoc>();
    return doc ? toView(doc) : null;
  }

  async delete(scope: TenantScope, id: string): Promise<boolean> {
    if (!isObjectIdHex(id)) return false;
    const res = await this.model.deleteOne(this.byId(scope, id));
    return res.deletedCount === 1;
  }
}
