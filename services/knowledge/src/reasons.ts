import { defineReasons, grpcStatus } from '@voiceapi/kit';

/** What the knowledge service refuses, beyond the kit's common reasons; the gateway maps each to HTTP. */
export const knowledgeReasons = defineReasons('knowledge.voiceapi', {
  // The wallet cannot cover a live upload.
  insufficient_credits: grpcStatus.FAILED_PRECONDITION,
  // Larger than the configured limit.
  payload_too_large: grpcStatus.INVALID_ARGUMENT,
  // A type not accepted, an executable, or bytes that are not what the name and type declare.
  unsupported_media_type: grpcStatus.INVALID_ARGUMENT,
  // Of an accepted type but damaged, or an archive that expands past the limits (a zip bomb).
  document_unreadable: grpcStatus.INVALID_ARGUMENT,
});
