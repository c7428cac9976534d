import { createPromiseClient, type PromiseClient } from '@voiceapi/kit';
import { voiceapi } from '@voiceapi/proto';

export type CompaniesClient = PromiseClient<typeof voiceapi.companies.v1.CompaniesServiceService>;
export type BillingClient = PromiseClient<typeof voiceapi.billing.v1.BillingServiceService>;
export type LeadsClient = PromiseClient<typeof voiceapi.leads.v1.LeadsServiceService>;
export type TelephonyClient = PromiseClient<typeof voiceapi.telephony.v1.TelephonyServiceService>;
export type KnowledgeClient = PromiseClient<typeof voiceapi.knowledge.v1.KnowledgeServiceService>;
export type AgentsClient = PromiseClient<typeof voiceapi.agents.v1.AgentsServiceService>;
export type WebhooksClient = PromiseClient<typeof voiceapi.webhooks.v1.WebhooksServiceService>;

/** The gateway's clients of the owning services, one per service. */
export interface ServiceClients {
  companies: CompaniesClient;
  billing: BillingClient;
  leads: LeadsClient;
  telephony: TelephonyClient;
  knowledge: KnowledgeClient;
  agents: AgentsClient;
  webhooks: WebhooksClient;
}

export function createServiceClients(cfg: {
  COMPANIES_GRPC_ADDR: string;
  BILLING_GRPC_ADDR: string;
  LEADS_GRPC_ADDR: string;
  TELEPHONY_GRPC_ADDR: string;
  KNOWLEDGE_GRPC_ADDR: string;
  AGENTS_GRPC_ADDR: string;
  WEBHOOKS_GRPC_ADDR: string;
  GRPC_DEADLINE_MS: number;
}): ServiceClients {
  const defaults = { timeoutMs: cfg.GRPC_DEADLINE_MS };
  return {
    companies: createPromiseClient(voiceapi.companies.v1.CompaniesServiceService, cfg.COMPANIES_GRPC_ADDR, {
      ...defaults,
      contract: voiceapi.companies.v1.CompaniesServiceDefinition,
    }),
    billing: createPromiseClient(voiceapi.billing.v1.BillingServiceService, cfg.BILLING_GRPC_ADDR, {
      ...defaults,
      contract: voiceapi.billing.v1.BillingServiceDefinition,
    }),
    leads: createPromiseClient(voiceapi.leads.v1.LeadsServiceService, cfg.LEADS_GRPC_ADDR, {
      ...defaults,
      contract: voiceapi.leads.v1.LeadsServiceDefinition,
    }),
    telephony: createPromiseClient(voiceapi.telephony.v1.TelephonyServiceService, cfg.TELEPHONY_GRPC_ADDR, {
      ...defaults,
      contract: voiceapi.telephony.v1.TelephonyServiceDefinition,
    }),
    knowledge: createPromiseClient(voiceapi.knowledge.v1.KnowledgeServiceService, cfg.KNOWLEDGE_GRPC_ADDR, {
      ...defaults,
      contract: voiceapi.knowledge.v1.KnowledgeServiceDefinition,
    }),
    agents: createPromiseClient(voiceapi.agents.v1.AgentsServiceService, cfg.AGENTS_GRPC_ADDR, {
      ...defaults,
      contract: voiceapi.agents.v1.AgentsServiceDefinition,
    }),
    webhooks: createPromiseClient(voiceapi.webhooks.v1.WebhooksServiceService, cfg.WEBHOOKS_GRPC_ADDR, {
      ...defaults,
      contract: voiceapi.webhooks.v1.WebhooksServiceDefinition,
    }),
  };
}

export function closeServiceClients(clients: ServiceClients): void {
  for (const c of Object.values(clients) as { close(): void }[]) c.close();
}
