import { registerService, type Logger, type ServiceRegistration } from '@voiceapi/kit';
import { voiceapi } from '@voiceapi/proto';
import type { CompanyUseCases } from '../usecases/companies';

/** gRPC adapter: maps messages to use-case calls and back, nothing more. */
export function companiesService(uc: CompanyUseCases, log: Logger): ServiceRegistration {
  return registerService(
    'voiceapi.companies.v1.CompaniesService',
    voiceapi.companies.v1.CompaniesServiceService,
    {
      listCompanies: async (req, ctx) => {
        const page = req.page?.page ?? 1;
        const limit = req.page?.limit ?? 25;
        const res = await uc.list(ctx, page, limit);
        return { companies: res.companies, page: { page, limit, total: res.total } };
      },
      createCompany: async (req, ctx) => ({ company: await uc.create(ctx, req.fields) }),
      getCompany: async (req, ctx) => ({ company: await uc.get(ctx, req.id) }),
      updateCompany: async (req, ctx) => ({ company: await uc.update(ctx, req.id, req.fields) }),
      deleteCompany: async (req, ctx) => {
        await uc.delete(ctx, req.id);
        return {};
      },
      getLatestCompany: async (_req, ctx) => ({ company: await uc.latest(ctx) }),
    },
    log,
  );
}
