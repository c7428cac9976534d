import { connectCallees } from '@voiceapi/kit/grpc';
import type { OpenedService } from '@voiceapi/kit/service';
import { companyProfiles } from '../clients/companies';
import { knowledgeDocuments } from '../clients/knowledge';
import { ownedNumbers } from '../clients/telephony';
import { callees, type Config } from '../config';

export type Clients = ReturnType<typeof connectClients>;

/** The ports agents reaches other services through; their gRPC clients close together on stop. */
export function connectClients({ cfg, lifecycle }: OpenedService<Config>) {
  const grpc = connectCallees(callees, cfg, {
    timeoutMs: cfg.GRPC_DEADLINE_MS,
    closeOn: lifecycle,
    closeAs: 'clients',
  });
  return {
    numbers: ownedNumbers(grpc.telephony),
    companies: companyProfiles(grpc.companies),
    knowledge: knowledgeDocuments(grpc.knowledge),
  };
}
