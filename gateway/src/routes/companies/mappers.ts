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
