import { closeClients, connectCallees, type CalleeSettings, type PromiseClient } from '@voiceapi/kit/grpc';
import type { voiceapi } from '@voiceapi/proto';
import { callees } from '../config';

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

export function createServiceClients(
  cfg: CalleeSettings<typeof callees> & { GRPC_DEADLINE_MS: number },
): ServiceClients {
  return connectCallees(callees, cfg, { timeoutMs: cfg.GRPC_DEADLINE_MS });
}

export function closeServiceClients(clients: ServiceClients): void {
  closeClients(clients);
}
