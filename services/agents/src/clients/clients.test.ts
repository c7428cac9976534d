import { commonReasons } from '@voiceapi/kit/errors';
import { requireTenant } from '@voiceapi/kit/grpc';
import { companyProfiles } from './companies';
import { knowledgeDocuments } from './knowledge';
import { ownedNumbers } from './telephony';

const scope = requireTenant({ tenantId: 't-1', keyMode: 'live' });
const notFound = () => Promise.reject(commonReasons.error('not_found', 'company not found'));
const away = commonReasons.error('service_unavailable', 'away');

describe("agents' clients to other services", () => {
  it('answers null for what the other service does not find for this tenant, and passes on other failures', async () => {
    const companies = companyProfiles({ getCompany: notFound, getLatestCompany: () => Promise.reject(away) });
    expect(await companies.get(scope, 'c-1')).toBeNull();
    await expect(companies.latest(scope)).rejects.toBe(away);
    expect(await ownedNumbers({ getOwnedNumber: notFound }).find(scope, { id: 'n-1' })).toBeNull();
    expect(await knowledgeDocuments({ getDocumentText: notFound } as never).text(scope, 'f-1', 100)).toBeNull();
  });

  it('keeps only the profile fields a script is written from, and asks as the tenant', async () => {
    let asked: unknown;
    const company = {
      id: 'c-1',
      name: 'Sunrise Clinic',
      description: '',
      industry: 'healthcare',
      timezone: 'America/New_York',
      contactEmail: 'x@example.com',
    };
    const companies = companyProfiles({
      getCompany: async (_req: unknown, ctx: unknown) => ((asked = ctx), { company }),
    } as never);
    expect(await companies.get(scope, 'c-1')).toEqual({
      id: 'c-1',
      name: 'Sunrise Clinic',
      industry: 'healthcare',
      timezone: 'America/New_York',
    });
    expect(asked).toEqual({ tenantId: 't-1', keyMode: 'live' });
  });
});
