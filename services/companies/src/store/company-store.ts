import { type ReadBack } from '@voiceapi/kit/events';
import { type TenantScope } from '@voiceapi/kit/grpc';
import { modelOf, objectIds, TenantCollection, type Page, type QueryShape } from '@voiceapi/kit/mongo';
import { Schema, type Connection, type Types } from 'mongoose';
import type { Company, CompanyFields, ClearableField } from '../domain/company';

/**
 * The stored document. Free-form business hours are kept as JSON text: tenants may send any
 * JSON object, and documents cannot hold every JSON shape as it was sent (MongoDB treats
 * `$`-prefixed and dotted keys specially).
 */
interface CompanyDoc extends Omit<CompanyFields, 'businessHours'> {
  _id: Types.ObjectId;
  tenantId: string;
  businessHours?: string;
  /** Email-server and WhatsApp credentials, set by the dashboard. Never read into a Company. */
  omniChannelSettings?: Record<string, unknown>;
  createdAt: Date;
  updatedAt: Date;
}

export const companySchema = new Schema<CompanyDoc>(
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
// Serves `newest` (the list page and the latest company): a tenant's companies, newest first.
companySchema.index({ tenantId: 1, createdAt: -1, _id: -1 });

const NEWEST_FIRST = { createdAt: -1, _id: -1 } as const;

/** Every query this store runs besides lookups by `_id`, for the index check in its unit test. */
export const companyQueryShapes: QueryShape[] = [{ name: 'newest', equality: ['tenantId'], sort: NEWEST_FIRST }];

// Credentials are excluded by every find, and every result also goes through toCompany, which
// leaves them out in code (so a write's answer never carries them either).
const PUBLIC_PROJECTION = { omniChannelSettings: 0 } as const;

function toCompany(doc: CompanyDoc): Company {
  const { _id, tenantId: _tenant, omniChannelSettings: _credentials, businessHours, ...rest } = doc;
  return {
    id: _id.toString(),
    ...rest,
    ...(businessHours !== undefined && { businessHours: JSON.parse(businessHours) as Record<string, unknown> }),
  };
}

function toDoc<F extends Partial<CompanyFields>>(fields: F): Omit<F, 'businessHours'> & { businessHours?: string } {
  const { businessHours, ...rest } = fields;
  return businessHours === undefined ? rest : { ...rest, businessHours: JSON.stringify(businessHours) };
}

/** The companies collection, tenant-scoped by construction (see TenantCollection). */
export class CompanyStore {
  // No cache (decision 0141): a profile is read by id once per inbound call and per tenant read,
  // one indexed read each, while keeping a cache fresh across replicas took a change stream that
  // the store works through on every write of the system.
  private readonly companies: TenantCollection<CompanyDoc>;

  constructor(conn: Connection) {
    this.companies = new TenantCollection(modelOf(conn, 'Company', companySchema), objectIds, companyQueryShapes);
  }

  async create(scope: TenantScope, fields: CompanyFields, now: Date): Promise<Company> {
    return toCompany(await this.companies.insert(scope, { ...toDoc(fields), createdAt: now, updatedAt: now }));
  }

  async get(scope: TenantScope, id: string): Promise<Company | null> {
    const doc = await this.companies.findById(scope, id, PUBLIC_PROJECTION);
    return doc && toCompany(doc);
  }

  async latest(scope: TenantScope): Promise<Company | null> {
    const doc = await this.companies.findOne(scope, {}, { sort: NEWEST_FIRST, projection: PUBLIC_PROJECTION });
    return doc && toCompany(doc);
  }

  async list(scope: TenantScope, page: number, limit: number): Promise<Page<Company>> {
    const res = await this.companies.page(
      scope,
      {},
      { sort: NEWEST_FIRST, page, limit, projection: PUBLIC_PROJECTION },
    );
    return { ...res, items: res.items.map(toCompany) };
  }

  async update(
    scope: TenantScope,
    id: string,
    fields: Partial<CompanyFields>,
    now: Date,
    clear: readonly ClearableField[] = [],
  ): Promise<Company | null> {
    const unset = Object.fromEntries(clear.map((f) => [f, 1]));
    const doc = await this.companies.updateById(scope, id, {
      $set: { ...toDoc(fields), updatedAt: now },
      ...(clear.length > 0 && { $unset: unset }),
    });
    return doc && toCompany(doc);
  }

  /** An update made at `now` happened when the profile carries its time (a later update's event announces that one). */
  updatedAt(scope: TenantScope, id: string, now: Date): ReadBack {
    return this.companies.readBack(scope, id, 'present', { updatedAt: now });
  }

  /** A delete happened when the profile is gone. */
  deleted(scope: TenantScope, id: string): ReadBack {
    return this.companies.readBack(scope, id, 'absent');
  }

  async delete(scope: TenantScope, id: string): Promise<boolean> {
    return this.companies.deleteById(scope, id);
  }
}
