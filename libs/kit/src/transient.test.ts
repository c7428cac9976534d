import { mongo } from 'mongoose';
import { commonReasons, defineReasons, grpcStatus } from './errors';
import { isTransient, retryTransient } from './transient';

const someReasons = defineReasons('test.voiceapi', { insufficient_credits: grpcStatus.FAILED_PRECONDITION });

describe('isTransient', () => {
  it('is true for the store away and a backing service unavailable or slow', () => {
    expect(isTransient(new mongo.MongoNetworkError('connection reset'))).toBe(true);
    expect(isTransient(commonReasons.error('service_unavailable', 'away'))).toBe(true);
    expect(isTransient(commonReasons.error('upstream_timeout', 'slow'))).toBe(true);
  });
  it('is true for a bulk write cut by a lost connection (the driver wraps the network error as its errorResponse)', () => {
    const cut = new mongo.MongoBulkWriteError(
      new mongo.MongoNetworkError('connection 1 to 127.0.0.1:27017 closed'),
      {} as never,
    );
    expect(cut).toBeInstanceOf(mongo.MongoBulkWriteError);
    expect(isTransient(cut)).toBe(true);
    // A bulk write refused by the store (a duplicate key) stays what it is.
    const refused = new mongo.MongoBulkWriteError({ message: 'E11000 duplicate key', code: 11000 }, {} as never);
    expect(isTransient(refused)).toBe(false);
  });
  it('is false for domain refusals and programming errors', () => {
    expect(isTransient(someReasons.error('insufficient_credits', 'no'))).toBe(false);
    expect(isTransient(commonReasons.error('not_found', 'gone'))).toBe(false);
    expect(isTransient(new TypeError('x is undefined'))).toBe(false);
  });
});

describe('retryTransient', () => {
  it('asks again while the failure is transient, and answers the first success', async () => {
    let calls = 0;
    const seen: number[] = [];
    const v = await retryTransient(
      async () => {
        if (++calls < 3) throw new mongo.MongoNetworkError('away');
        return 'ok';
      },
      { deadline: Date.now() + 5_000, initialDelayMs: 1, onRetry: (_e, attempt) => seen.push(attempt) },
    );
    expect(v).toBe('ok');
    expect(calls).toBe(3);
    expect(seen).toEqual([1, 2]);
  });
  it('throws any other failure at once', async () => {
    let calls = 0;
    const refusal = someReasons.error('insufficient_credits', 'no');
    await expect(
      retryTransient(
        async () => {
          calls++;
          throw refusal;
        },
        { deadline: Date.now() + 5_000, initialDelayMs: 1 },
      ),
    ).rejects.toBe(refusal);
    expect(calls).toBe(1);
  });
  it('throws the last transient failure once the deadline has passed', async () => {
    let calls = 0;
    const started = Date.now();
    await expect(
      retryTransient(
        async () => {
          calls++;
          throw new mongo.MongoNetworkError('away');
        },
        { deadline: started + 50, initialDelayMs: 10, maxDelayMs: 10 },
      ),
    ).rejects.toBeInstanceOf(mongo.MongoNetworkError);
    expect(calls).toBeGreaterThan(1);
    expect(Date.now() - started).toBeLessThan(1_000);
  });
});
