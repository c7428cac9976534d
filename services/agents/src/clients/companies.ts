import { nullIfNotFound } from '@voiceapi/kit/errors';
import { contextOf, type PromiseClient } from '@voiceapi/kit/grpc';
import type { voiceapi } from '@voiceapi/proto';
import type { Companies } from '../usecases/ports';

type CompaniesClient = Pick<
  PromiseClient<typeof voiceapi.companies.v1.CompaniesServiceService>,
  'getCompany' | 'getLatestCompany'
>;

/** The profile fields a script is written from; credentials never leave companies. */
const toCompany = (c: voiceapi.companies.v1.Company | undefined) =>
  c
    ? {
        id: c.id,
        name: c.name,
        ...(c.description && { description: c.description }),
        ...(c.industry && { industry: c.industry }),
        ...(c.website && { website: c.website }),
        ...(c.timezone && { timezone: c.timezone }),
        ...(c.businessHours && { businessHours: c.businessHours }),
      }
    : null;

/** The tenant's company profiles, over companies' gRPC API (null: unknown or another tenant's). */
export function companyProfiles(companies: CompaniesClient): Companies {
  return {
    get: async (scope, id) =>
      toCompany((await nullIfNotFound(companies.getCompany({ id }, contextOf(scope))))?.company),
    latest: async (scope) => toCompany((await companies.getLatestCompany({}, contextOf(scope))).company),
  };
}
