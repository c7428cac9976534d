import { validationError, type DomainError, type ErrorDetail } from '@voiceapi/kit/errors';
import { gatewayReasons } from './reasons';

/** Reasons the route layer raises itself, about a request's body or its Idempotency-Key. */
export type RouteReason = 'validation_error' | keyof typeof gatewayReasons.reasons;

/**
 * The one place the route layer builds a domain error: mapped to its status and error body like
 * any other (errors.ts), thrown into a handler reading an upload, kept as an upload's failure.
 */
export const refusal = (reason: RouteReason, message: string, details?: ErrorDetail[]): DomainError =>
  reason === 'validation_error' ? validationError(message, details) : gatewayReasons.error(reason, message, details);
