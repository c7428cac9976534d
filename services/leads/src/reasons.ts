import { contractReasons, grpcStatus } from '@voiceapi/kit/errors';
import { voiceapi } from '@voiceapi/proto';

/**
 * What the leads service refuses, beyond the common reasons: the codes and what each means are the contract's
 * (proto/voiceapi/leads/v1/reasons.proto); here, the gRPC status each travels under. The
 * gateway maps each to HTTP.
 */
export const leadsReasons = contractReasons('leads.voiceapi', voiceapi.leads.v1.LeadsReason, {
  campaign_not_found: grpcStatus.FAILED_PRECONDITION,
  campaign_not_running: grpcStatus.FAILED_PRECONDITION,
  consent_required: grpcStatus.FAILED_PRECONDITION,
  do_not_call: grpcStatus.FAILED_PRECONDITION,
  event_route_not_found: grpcStatus.FAILED_PRECONDITION,
  insufficient_credits: grpcStatus.FAILED_PRECONDITION,
});
