import { contractReasons, grpcStatus } from '@voiceapi/kit/errors';
import { voiceapi } from '@voiceapi/proto';

/**
 * What the knowledge service refuses, beyond the common reasons: the codes and what each means are the contract's
 * (proto/voiceapi/knowledge/v1/reasons.proto); here, the gRPC status each travels under. The
 * gateway maps each to HTTP.
 */
export const knowledgeReasons = contractReasons('knowledge.voiceapi', voiceapi.knowledge.v1.KnowledgeReason, {
  insufficient_credits: grpcStatus.FAILED_PRECONDITION,
  payload_too_large: grpcStatus.INVALID_ARGUMENT,
  unsupported_media_type: grpcStatus.INVALID_ARGUMENT,
  document_unreadable: grpcStatus.INVALID_ARGUMENT,
});
