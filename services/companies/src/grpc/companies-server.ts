import { validationError } from '@voiceapi/kit/errors';
import { registerService, requireTenant, type ServiceRegistration, pageAsked } from '@voiceapi/kit/grpc';
import { type Logger } from '@voiceapi/kit/service';
import { voiceapi } from '@voiceapi/proto';
import type { ClearableField, Company, CompanyFields } from '../domain/company';
import type { Companies } from '../usecases/companies';

type ProtoCompany = voiceapi.companies.v1.Company;
type ProtoFields = voiceapi.companies.v1.CompanyFields;

/** gRPC adapter: proves the caller's tenant (`requireTenant`), maps messages to use-case calls and domain objects back, nothing more. */
export function companiesService(uc: Companies, log: Logger): ServiceRegistration {
  return registerService(
    'voiceapi.companies.v1.CompaniesService',
    voiceapi.companies.v1.CompaniesServiceService,
    {
      listCompanies: async (req, ctx) => {
        const res = await uc.list(requireTenant(ctx), pageAsked(req.page));
        return {
          companies: res.items.map(toProto),
          page: { page: res.page, limit: res.limit, total: res.total, hasMore: res.hasMore },
        };
      },
      createCompany: async (req, ctx) => ({
        company: toProto(await uc.create(requireTenant(ctx), fromProto(req.fields))),
      }),
      getCompany: async (req, ctx) => ({ company: toProto(await uc.get(requireTenant(ctx), req.id)) }),
      updateCompany: async (req, ctx) => ({
        company: toProto(
          await uc.update(requireTenant(ctx), req.id, fromProto(req.fields), clearedFields(req.clearFields)),
        ),
      }),
      deleteCompany: async (req, ctx) => {
        await uc.delete(requireTenant(ctx), req.id);
        return {};
      },
      getLatestCompany: async (_req, ctx) => {
        const latest = await uc.latest(requireTenant(ctx));
        return latest ? { company: toProto(latest) } : {};
      },
    },
    log,
  );
}

const TEXT_FIELDS = [
  'name',
  'mobile',
  'countryCode',
  'countryIso',
  'description',
  'industry',
  'website',
  'timezone',
] as const;

/** Keeps only fields that were sent (proto3 optional presence), so an update changes nothing else. */
export function fromProto(fields: ProtoFields | undefined): Partial<CompanyFields> {
  const out: Partial<CompanyFields> = {};
  if (!fields) return out;
  for (const key of TEXT_FIELDS) {
    const value = fields[key];
    if (value !== undefined) out[key] = value;
  }
  if (fields.businessHours !== undefined) out.businessHours = fields.businessHours;
  return out;
}

/** Proto field names of what may be removed → the domain's names. */
const CLEARABLE: Record<string, ClearableField> = {
  mobile: 'mobile',
  country_code: 'countryCode',
  country_iso: 'countryIso',
  description: 'description',
  industry: 'industry',
  website: 'website',
  business_hours: 'businessHours',
  timezone: 'timezone',
};

function clearedFields(names: string[]): ClearableField[] {
  const unknown = names.filter((n) => !Object.prototype.hasOwnProperty.call(CLEARABLE, n));
  if (unknown.length) {
    throw validationError(
      `these fields cannot be removed: ${unknown.join(', ')}`,
      unknown.map((n) => ({ path: n, message: 'cannot be removed' })),
    );
  }
  return [...new Set(names.map((n) => CLEARABLE[n]!))];
}

export function toProto(c: Company): ProtoCompany {
  return {
    id: c.id,
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
