import { contextOf, type PromiseClient } from '@voiceapi/kit/grpc';
import type { voiceapi } from '@voiceapi/proto';
import type { DialClaims } from '../usecases/ports';

type LeadsClient = Pick<PromiseClient<typeof voiceapi.leads.v1.LeadsServiceService>, 'claimDial'>;

/** Leads' claim of a dial (its checks again, once per dial id), over its gRPC API. */
export function leadsDialClaims(leads: LeadsClient): DialClaims {
  return {
    async claim(scope, contactId, dialId) {
      const r = await leads.claimDial({ contactId, dialId }, contextOf(scope));
      return r.allowed
        ? {
            allowed: true,
            maxCallSeconds: r.maxCallSeconds,
            campaignId: r.campaignId,
            ...(r.agentName && { agentName: r.agentName }),
            ...(r.fromNumber && { fromNumber: r.fromNumber }),
          }
        : { allowed: false, refusal: r.refusal ?? 'refused' };
    },
  };
}
