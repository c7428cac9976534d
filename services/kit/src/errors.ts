import { Metadata, status, type ServiceError } from '@grpc/grpc-js';

/**
 * The one catalogue of machine-readable reason codes. Each code has exactly one HTTP status
 * (what tenants see) and one gRPC status (what crosses between processes). Services throw
 * `DomainError`s; the gRPC server adapter turns them into a status plus a `reason-code`
 * trailer; the gateway turns that back into the documented error body.
 */
export const REASONS = {
  validation_error: { http: 400, grpc: status.INVALID_ARGUMENT },
  unauthorized: { http: 401, grpc: status.UNAUTHENTICATED },
  insufficient_credits: { http: 402, grpc: status.FAILED_PRECONDITION },
  forbidden: { http: 403, grpc: status.PERMISSION_DENIED },
  not_found: { http: 404, grpc: status.NOT_FOUND },
  method_not_allowed: { http: 405, grpc: status.UNIMPLEMENTED },
  conflict: { http: 409, grpc: status.ALREADY_EXISTS },
  script_not_ready: { http: 409, grpc: status.FAILED_PRECONDITION },
  idempotency_in_progress: { http: 409, grpc: status.ABORTED },
  campaign_not_running: { http: 409, grpc: status.FAILED_PRECONDITION },
  payload_too_large: { http: 413, grpc: status.INVALID_ARGUMENT },
  unsupported_media_type: { http: 415, grpc: status.INVALID_ARGUMENT },
  company_not_found: { http: 422, grpc: status.FAILED_PRECONDITION },
  knowledge_document_not_found: { http: 422, grpc: status.FAILED_PRECONDITION },
  phone_not_owned: { http: 422, grpc: status.FAILED_PRECONDITION },
  campaign_not_found: { http: 422, grpc: status.FAILED_PRECONDITION },
  consent_required: { http: 422, grpc: status.FAILED_PRECONDITION },
  do_not_call: { http: 422, grpc: status.FAILED_PRECONDITION },
  event_route_not_found: { http: 422, grpc: status.FAILED_PRECONDITION },
  idempotency_key_reused: { http: 422, grpc: status.FAILED_PRECONDITION },
  custom_api_not_configured: { http: 422, grpc: status.FAILED_PRECONDITION },
  url_not_allowed: { http: 422, grpc: status.FAILED_PRECONDITION },
  rate_limited: { http: 429, grpc: status.RESOURCE_EXHAUSTED },
  internal_error: { http: 500, grpc: status.INTERNAL },
  custom_api_error: { http: 502, grpc: status.UNAVAILABLE },
  api_globally_disabled: { http: 503, grpc: status.UNAVAILABLE },
  service_unavailable: { http: 503, grpc: status.UNAVAILABLE },
  upstream_timeout: { http: 504, grpc: status.DEADLINE_EXCEEDED },
} as const satisfies Record<string, { http: number; grpc: status }>;

export type ReasonCode = keyof typeof REASONS;

export function isReasonCode(value: unknown): value is ReasonCode {
  return typeof value === 'string' && Object.prototype.hasOwnProperty.call(REASONS, value);
}

/** A field problem reported on 400 (and, for do_not_call, which list matched). */
export interface ErrorDetail {
  path: string;
  message: string;
}

/** An expected failure of a use case, safe to show to the caller. */
export class DomainError extends Error {
  override name = 'DomainError';
  constructor(
    readonly reasonCode: ReasonCode,
    message: string,
    readonly details?: ErrorDetail[],
  ) {
    super(message);
  }

  get httpStatus(): number {
    return REASONS[this.reasonCode].http;
  }
}

export const notFound = (what = 'resource'): DomainError =>
  new DomainError('not_found', `${what} not found`);

const REASON_KEY = 'reason-code';
const DETAILS_KEY = 'error-details-bin';

/** Domain error → gRPC error with the reason code in trailing metadata. Anything else is internal. */
export function toGrpcError(err: unknown): Partial<ServiceError> {
  const metadata = new Metadata();
  if (err instanceof DomainError) {
    metadata.set(REASON_KEY, err.reasonCode);
    if (err.details?.length) metadata.set(DETAILS_KEY, Buffer.from(JSON.stringify(err.details)));
    return { code: REASONS[err.reasonCode].grpc, details: err.message, metadata };
  }
  metadata.set(REASON_KEY, 'internal_error');
  return { code: status.INTERNAL, details: 'internal error', metadata };
}

/** A gRPC failure seen by a caller → the domain error it stands for. */
export function fromGrpcError(err: unknown): DomainError {
  const e = err as Partial<ServiceError>;
  const reason = e.metadata?.get(REASON_KEY)[0];
  if (isReasonCode(reason)) {
    const raw = e.metadata?.get(DETAILS_KEY)[0];
    let details: ErrorDetail[] | undefined;
    if (Buffer.isBuffer(raw)) {
      try {
        details = JSON.parse(raw.toString('utf8')) as ErrorDetail[];
      } catch {
        details = undefined;
      }
    }
    const message = reason === 'internal_error' ? 'internal error' : (e.details ?? reason);
    return new DomainError(reason, message, details);
  }
  switch (e.code) {
    case status.UNAVAILABLE:
      return new DomainError('service_unavailable', 'a backing service is unavailable, retry shortly');
    case status.DEADLINE_EXCEEDED:
      return new DomainError('upstream_timeout', 'a backing service did not answer in time');
    case status.CANCELLED:
      return new DomainError('service_unavailable', 'the call to a backing service was cancelled');
    default:
      return new DomainError('internal_error', 'internal error');
  }
}
