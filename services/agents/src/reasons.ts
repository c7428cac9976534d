import { contractReasons, grpcStatus } from '@voiceapi/kit/errors';
import { voiceapi } from '@voiceapi/proto';

/**
 * What the agents service refuses, beyond the common reasons: the codes and what each means are the contract's
 * (proto/voiceapi/agents/v1/reasons.proto); here, the gRPC status each travels under. The
 * gateway maps each to HTTP.
 */
export const agentsReasons = contractReasons('agents.voiceapi', voiceapi.agents.v1.AgentsReason, {
  phone_not_owned: grpcStatus.FAILED_PRECONDITION,
  company_not_found: grpcStatus.FAILED_PRECONDITION,
  knowledge_document_not_found: grpcStatus.FAILED_PRECONDITION,
  script_not_ready: grpcStatus.FAILED_PRECONDITION,
  phone_scope_conflict: grpcStatus.ALREADY_EXISTS,
  custom_api_not_configured: grpcStatus.FAILED_PRECONDITION,
  url_not_allowed: grpcStatus.FAILED_PRECONDITION,
  custom_api_error: grpcStatus.FAILED_PRECONDITION,
});
