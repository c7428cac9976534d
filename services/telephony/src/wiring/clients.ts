import { connectCallees } from '@voiceapi/kit/grpc';
import type { OpenedService } from '@voiceapi/kit/service';
import { answeringAgents } from '../clients/agents';
import { billingWallet } from '../clients/billing';
import { leadsDialClaims } from '../clients/leads';
import { callees, type Config } from '../config';

export type Clients = ReturnType<typeof connectClients>;

/** The ports telephony reaches other services through; each gRPC client closes on stop. */
export function connectClients({ cfg, lifecycle }: OpenedService<Config>) {
  const grpc = connectCallees(callees, cfg, { timeoutMs: cfg.GRPC_DEADLINE_MS, closeOn: lifecycle });
  return {
    wallet: billingWallet(grpc.billing),
    claims: leadsDialClaims(grpc.leads),
    agents: answeringAgents(grpc.agents),
  };
}
