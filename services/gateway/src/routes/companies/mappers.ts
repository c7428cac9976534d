import type { voiceapi } from '@voiceapi/proto';
import type { z } from '../../http/zod';
import type { Company } from './schemas';

/** The companies service's message → the JSON answer (credentials never reach the gateway). */
export function companyJson(c: voiceapi.companies.v1.Company | undefined): z.infer<typeof Company> {
  if (!c) throw new Error('companies service answered without a company');
  return {
    id: c.id,
    name: c.name,
    mobile: c.mobile ?? null,
    countryCode: c.countryCode ?? null,
    countryIso: c.countryIso ?? null,
    description: c.description ?? null,
    industry: c.industry ?? null,
    website: c.website ?? null,
    businessHours: c.businessHours ?? null,
    timezone: c.timezone ?? null,
    createdAt: (c.createTime ?? new Date(0)).toISOString(),
    updatedAt: (c.updateTime ?? new Date(0)).toISOString(),
  };
}

/** The proto name of each field a PATCH may remove with `null`. */
const PROTO_NAME: Record<string, string> = {
  mobile: 'mobile',
  countryCode: 'country_code',
  countryIso: 'country_iso',
  description: 'description',
  industry: 'industry',
  website: 'website',
  businessHours: 'business_hours',
  timezone: 'timezone',
};

/** A PATCH body → the fields to set and the fields to remove (sent as `null`). */
export function updateRequest(id: string, body: Record<string, unknown>): voiceapi.companies.v1.UpdateCompanyRequest {
  const fields: Record<string, unknown> = {};
  const clearFields: string[] = [];
  for (const [key, value] of Object.entries(body)) {
    if (value === null) clearFields.push(PROTO_NAME[key]!);
    else if (value !== undefined) fields[key] = value;
  }
  return { id, fields, clearFields };
}
