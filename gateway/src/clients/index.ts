import { createPromiseClient, type PromiseClient } from '@voiceapi/kit';
import { voiceapi } from '@voiceapi/proto';

export type CompaniesClient = PromiseClient<typeof voiceapi.companies.v1.CompaniesServiceService>;

/** The gateway's clients of the owning services, one per service. */
export interface ServiceClients {
  companies: CompaniesClient;
}

export function createServiceClients(cfg: { COMPANIES_GRPC_ADDR: string; GRPC_DEADLINE_MS: number }): ServiceClients {
  const defaults = { timeoutMs: cfg.GRPC_DEADLINE_MS };
  return {
    companies: createPromiseClient(voiceapi.companies.v1.CompaniesServiceService, cfg.COMPANIES_GRPC_ADDR, defaults),
  };
}

export function closeServiceClients(clients: ServiceClients): void {
  for (const c of Object.values(clients)) c.close();
}
