import { Metadata, status, type ServiceError } from '@grpc/grpc-js';
import { DomainError, fromGrpcError, REASONS, toGrpcError } from './errors';

const asServiceError = (e: Partial<ServiceError>) => e as ServiceError;

describe('error mapping', () => {
  it('carries a domain error across gRPC with its reason code, message and details', () => {
    const original = new DomainError('validation_error', 'name is required', [{ path: 'name', message: 'required' }]);
    const wire = toGrpcError(original);
    expect(wire.code).toBe(status.INVALID_ARGUMENT);
    const back = fromGrpcError(asServiceError(wire));
    expect(back.reasonCode).toBe('validation_error');
    expect(back.message).toBe('name is required');
    expect(back.details).toEqual([{ path: 'name', message: 'required' }]);
    expect(back.httpStatus).toBe(400);
  });

  it('never lets an unexpected error message cross a process boundary', () => {
    const wire = toGrpcError(new Error('connection string mongodb://user:secret@host failed'));
    expect(wire.code).toBe(status.INTERNAL);
    expect(wire.details).toBe('internal error');
    const back = fromGrpcError(asServiceError(wire));
    expect(back.reasonCode).toBe('internal_error');
    expect(back.message).toBe('internal error');
  });

  it.each([
    [status.UNAVAILABLE, 'service_unavailable', 503],
    [status.DEADLINE_EXCEEDED, 'upstream_timeout', 504],
    [status.CANCELLED, 'service_unavailable', 503],
    [status.UNKNOWN, 'internal_error', 500],
  ])('maps a transport failure with gRPC status %s to %s (%s)', (code, reason, http) => {
    const err = fromGrpcError(asServiceError({ code, details: 'raw transport text', metadata: new Metadata() }));
    expect(err.reasonCode).toBe(reason);
    expect(err.httpStatus).toBe(http);
    expect(err.message).not.toContain('raw transport text');
  });

  it('gives every reason code one HTTP status in the documented range', () => {
    for (const [code, r] of Object.entries(REASONS)) {
      expect({ code, ok: r.http >= 400 && r.http < 600 }).toEqual({ code, ok: true });
    }
    expect(REASONS.not_found.http).toBe(404);
    expect(REASONS.api_globally_disabled.http).toBe(503);
    expect(REASONS.idempotency_key_reused.http).toBe(422);
  });
});
