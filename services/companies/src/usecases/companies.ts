import { notFound, requireTenant, validationError, type CallContext } from '@voiceapi/kit';
import type { voiceapi } from '@voiceapi/proto';
import type { CompanyFields, CompanyStore, CompanyView } from '../store/company-store';

type Company = voiceapi.companies.v1.Company;
type ProtoFields = voiceapi.companies.v1.CompanyFields;

const MAX_LIMIT = 100;

/** The companies use cases: tenant-scoped CRUD. Shapes are validated at the gateway; this layer
 * re-checks what the data's integrity depends on, since other callers may appear. */
export class CompanyUseCases {
  constructor(
    private readonly store: CompanyStore,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async list(ctx: CallContext, page: number, limit: number): Promise<{ companies: Company[]; total: number }> {
    const scope = requireTenant(ctx);
    const safePage = Math.max(1, page || 1);
    const safeLimit = Math.min(MAX_LIMIT, Math.max(1, limit || 25));
    const { items, total } = await this.store.list(scope, safePage, safeLimit);
    return { companies: items.map(toProto), total };
  }

  async create(ctx: CallContext, fields: ProtoFields | undefined): Promise<Company> {
    const scope = requireTenant(ctx);
    const clean = cleanFields(fields);
    if (!clean.name) throw validationError('name is required', [{ path: 'name', message: 'required' }]);
    return toProto(await this.store.create(scope, { ...clean, name: clean.name }, this.now()));
  }

  async get(ctx: CallContext, id: string): Promise<Company> {
    const found = await this.store.get(requireTenant(ctx), id);
    if (!found) throw notFound('company');
    return toProto(found);
  }

  async latest(ctx: CallContext): Promise<Company | undefined> {
    const found = await this.store.latest(requireTenant(ctx));
    return found ? toProto(found) : undefined;
  }

  async update(ctx: CallContext, id: string, fields: ProtoFields | undefined): Promise<Company> {
    const scope = requireTenant(ctx);
    const clean = cleanFields(fields);
    if (clean.name !== undefined && clean.name.trim() === '') {
      throw validationError('name cannot be empty', [{ path: 'name', message: 'must not be empty' }]);
    }
    const updated = await this.store.update(scope, id, clean, this.now());
    if (!updated) throw notFound('company');
    return toProto(updated);
  }

  async delete(ctx: CallContext, id: string): Promise<void> {
    if (!(await this.store.delete(requireTenant(ctx), id))) throw notFound('company');
  }
}

/** Keeps only fields that were sent (proto3 optional presence), so PATCH changes nothing else. */
function cleanFields(fields: ProtoFields | undefined): Partial<CompanyFields> {
  const out: Partial<CompanyFields> = {};
  if (!fields) return out;
  for (const key of ['name', 'mobile', 'countryCode', 'countryIso', 'description', 'industry', 'website', 'timezone'] as const) {
    const value = fields[key];
    if (value !== undefined) out[key] = value;
  }
  if (fields.businessHours !== undefined) out.businessHours = fields.businessHours;
  return out;
}

export function toProto(c: CompanyView): Company {
  return {
    id: c._id.toString(),
    name: c.name,
    mobile: c.mobile,
    countryCode: c.countryCode,
    countryIso: c.countryIso,
    description: c.description,
    industry: c.industry,
    website: c.website,
    businessHours: c.businessHours,
    timezone: c.timezone,
    createTime: c.createdAt,
    updateTime: c.updatedAt,
  };
}
