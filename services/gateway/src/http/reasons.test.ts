import { commonReasons, defineReasons, fromGrpcError, grpcStatus, toGrpcError } from '@voiceapi/kit/errors';
import { type Logger } from '@voiceapi/kit/service';
import { errorResult } from './errors';

function recordingLog() {
  const errors: unknown[][] = [];
  const log = { error: (...args: unknown[]) => void errors.push(args) } as unknown as Logger;
  return { log, errors };
}

// What the gateway answers for errors that came back from a service over gRPC.
const viaGrpc = (err: unknown) => fromGrpcError(toGrpcError(err));

describe('errorResult: reason → HTTP, in one table', () => {
  it('answers a service-declared reason it knows with its documented status and body', () => {
    const billing = defineReasons('billing.voiceapi', { insufficient_credits: grpcStatus.FAILED_PRECONDITION });
    const { log } = recordingLog();
    expect(errorResult(viaGrpc(billing.error('insufficient_credits', 'balance too low')), log)).toMatchObject({
      status: 402,
      body: { error: 'balance too low', reasonCode: 'insufficient_credits' },
    });
  });

  it('turns a reason it does not know into a logged 500 that hides the text', () => {
    const rogue = defineReasons('rogue.voiceapi', { made_up: grpcStatus.FAILED_PRECONDITION });
    const { log, errors } = recordingLog();
    const result = errorResult(viaGrpc(rogue.error('made_up', 'internal detail')), log, 'req-1');
    expect(result).toEqual({ status: 500, body: { error: 'internal error', reasonCode: 'internal_error' } });
    expect(errors).toHaveLength(1);
    expect(errors[0]![0]).toMatchObject({ reason: 'made_up', domain: 'rogue.voiceapi', requestId: 'req-1' });
  });

  it('answers anything that is not a domain error as a logged 500', () => {
    const { log, errors } = recordingLog();
    expect(errorResult(new TypeError('x is undefined'), log).status).toBe(500);
    expect(errors).toHaveLength(1);
  });

  it('asks the caller to retry when a service is down or slow', () => {
    const { log } = recordingLog();
    const down = errorResult(commonReasons.error('service_unavailable', 'down'), log);
    expect(down).toMatchObject({ status: 503, headers: { 'Retry-After': '1' } });
    expect(errorResult(commonReasons.error('upstream_timeout', 'slow'), log)).toMatchObject({
      status: 504,
      headers: { 'Retry-After': '1' },
    });
  });

  it("answers billing's reasons with their contract statuses; only a busy wallet asks for a retry", () => {
    const billing = defineReasons('billing.voiceapi', {
      insufficient_credits: grpcStatus.FAILED_PRECONDITION,
      reference_conflict: grpcStatus.ALREADY_EXISTS,
      sandbox_not_billable: grpcStatus.FAILED_PRECONDITION,
      wallet_busy: grpcStatus.ABORTED,
    });
    const { log, errors } = recordingLog();
    const answer = (reason: keyof typeof billing.reasons) => {
      const r = errorResult(viaGrpc(billing.error(reason, reason)), log);
      return {
        reason,
        status: r.status,
        retryAfter: r.headers?.['Retry-After'] ?? null,
        reasonCode: (r.body as { reasonCode: string }).reasonCode,
      };
    };
    expect(
      (['insufficient_credits', 'reference_conflict', 'sandbox_not_billable', 'wallet_busy'] as const).map(answer),
    ).toEqual([
      { reason: 'insufficient_credits', status: 402, retryAfter: null, reasonCode: 'insufficient_credits' },
      { reason: 'reference_conflict', status: 409, retryAfter: null, reasonCode: 'reference_conflict' },
      { reason: 'sandbox_not_billable', status: 409, retryAfter: null, reasonCode: 'sandbox_not_billable' },
      { reason: 'wallet_busy', status: 503, retryAfter: '1', reasonCode: 'wallet_busy' },
    ]);
    expect(errors).toEqual([]);
  });

  it('carries field problems into details', () => {
    const { log } = recordingLog();
    const r = errorResult(
      viaGrpc(commonReasons.error('validation_error', 'bad', [{ path: 'name', message: 'required' }])),
      log,
    );
    expect(r).toMatchObject({ status: 400, body: { details: [{ path: 'name', message: 'required' }] } });
  });
});
