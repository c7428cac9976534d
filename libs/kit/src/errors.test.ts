import { Metadata, status, type ServiceError } from '@grpc/grpc-js';
import { google } from '@voiceapi/proto';
import { mongo } from 'mongoose';
import { commonReasons, defineReasons, domainErrorOf, fromGrpcError, toGrpcError } from './errors';

const asServiceError = (e: Partial<ServiceError>) => e as ServiceError;
const billing = defineReasons('billing.voiceapi', { insufficient_credits: status.FAILED_PRECONDITION });

describe('error mapping across gRPC', () => {
  it('carries a service-declared reason, its domain, message and field problems', () => {
    const wire = toGrpcError(
      billing.error('insufficient_credits', 'the wallet cannot cover 12 credits', [
        { path: 'amount', message: 'too large' },
      ]),
    );
    expect(wire.code).toBe(status.FAILED_PRECONDITION);
    const back = fromGrpcError(asServiceError(wire));
    expect(back).toMatchObject({
      reasonCode: 'insufficient_credits',
      domain: 'billing.voiceapi',
      message: 'the wallet cannot cover 12 credits',
    });
    expect(back.details).toEqual([{ path: 'amount', message: 'too large' }]);
  });

  it('sends the standard google.rpc.Status trailer that any gRPC client can read', () => {
    const wire = toGrpcError(
      commonReasons.error('validation_error', 'name is required', [{ path: 'name', message: 'required' }]),
    );
    const raw = wire.metadata!.get('grpc-status-details-bin')[0] as Buffer;
    const decoded = google.rpc.Status.decode(raw);
    expect(decoded.code).toBe(status.INVALID_ARGUMENT);
    expect(decoded.details.map((d) => d.typeUrl)).toEqual([
      'type.googleapis.com/google.rpc.ErrorInfo',
      'type.googleapis.com/google.rpc.BadRequest',
    ]);
    expect(google.rpc.ErrorInfo.decode(decoded.details[0]!.value)).toMatchObject({
      reason: 'validation_error',
      domain: 'voiceapi',
    });
  });

  it('never lets an unexpected error message cross a process boundary', () => {
    const wire = toGrpcError(new Error('connection string mongodb://user:secret@host failed'));
    expect(wire.code).toBe(status.INTERNAL);
    expect(JSON.stringify(wire)).not.toContain('secret');
    const back = fromGrpcError(asServiceError(wire));
    expect(back.reasonCode).toBe('internal_error');
    expect(back.message).toBe('internal error');
  });

  it.each([
    [status.UNAVAILABLE, 'service_unavailable'],
    [status.DEADLINE_EXCEEDED, 'upstream_timeout'],
    [status.CANCELLED, 'service_unavailable'],
    [status.UNKNOWN, 'internal_error'],
  ])('maps a transport failure with gRPC status %s (no details) to %s without its text', (code, reason) => {
    const err = fromGrpcError(asServiceError({ code, details: 'raw transport text', metadata: new Metadata() }));
    expect(err.reasonCode).toBe(reason);
    expect(err.message).not.toContain('raw transport text');
  });

  it('treats an unreadable details trailer as a transport failure', () => {
    const metadata = new Metadata();
    metadata.set('grpc-status-details-bin', Buffer.from([0xff, 0xff, 0xff]));
    expect(fromGrpcError(asServiceError({ code: status.INTERNAL, details: 'x', metadata })).reasonCode).toBe(
      'internal_error',
    );
  });
});

describe('domainErrorOf', () => {
  it('answers the store being away as service_unavailable, and anything unknown as nothing', () => {
    const network = new mongo.MongoNetworkError('connect ECONNREFUSED 127.0.0.1:27017');
    const selection = Object.assign(new Error('server selection'), { name: 'MongooseServerSelectionError' });
    const shuttingDown = new mongo.MongoServerError({
      code: 91,
      errmsg: 'The server is in quiesce mode and will shut down',
    });
    const labelled = new mongo.MongoServerError({
      code: 262,
      errmsg: 'exceeded time limit',
      errorLabels: ['RetryableWriteError'],
    });
    // What a write to a connection the store has just closed throws, unwrapped by the driver.
    const writeAfterClose = Object.assign(new Error('This socket has been ended by the other party'), {
      code: 'EPIPE',
    });
    for (const e of [
      network,
      selection,
      shuttingDown,
      labelled,
      writeAfterClose,
      new Error('outer', { cause: network }),
    ])
      expect(domainErrorOf(e)?.reasonCode).toBe('service_unavailable');
    expect(domainErrorOf(new Error('a bug'))).toBeUndefined();
    expect(domainErrorOf(Object.assign(new Error('no such file'), { code: 'ENOENT' }))).toBeUndefined();
    expect(
      domainErrorOf(new mongo.MongoServerError({ code: 11000, errmsg: 'E11000 duplicate key error' })),
    ).toBeUndefined();
  });
});
