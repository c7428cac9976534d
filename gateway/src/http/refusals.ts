import { DomainError, type ErrorDetail } from '@voiceapi/kit';

/** Reasons the route layer raises itself, about a request's body or its Idempotency-Key. */
export type RouteReason = 'validation_error' | 'payload_too_large' | 'unsupported_media_type' | 'idempotency_in_progress' | 'idempotency_key_reused';

/**
 * The one place the route layer builds a domain error: mapped to its status and error body like
 * any other (errors.ts), thrown into a handler reading an upload, kept as an upload's failure.
 */
export const refusal = (reason: RouteReason, message: string, details?: ErrorDetail[]): DomainError => new DomainError(reason, message, details);
