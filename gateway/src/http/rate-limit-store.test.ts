import { perKeyRateLimit } from './middleware';
import { SnapshotMemoryStore } from './rate-limit-store';

describe('per-key rate limit', () => {
  function fakeRes(keyId: string, limit: number) {
    const headers: Record<string, unknown> = {};
    const res = {
      statusCode: 200,
      locals: { auth: { keyId, rateLimitPerSecond: limit } },
      setHeader: (k: string, v: unknown) => void (headers[k.toLowerCase()] = v),
      getHeader: (k: string) => headers[k.toLowerCase()],
      status(code: number) {
        res.statusCode = code;
        return res;
      },
      json: () => undefined,
      end: () => undefined,
      once: () => undefined,
      on: () => undefined,
      headers,
    };
    return res;
  }

  it('lets exactly `limit` requests of a concurrent burst through, and refuses the rest', async () => {
    const limiter = perKeyRateLimit(50);
    const req = { ip: '127.0.0.1', headers: {}, get: () => undefined, app: { get: () => undefined } };
    const outcomes = await Promise.all(
      Array.from({ length: 8 }, () => {
        const res = fakeRes('burst-key', 3);
        return new Promise<string>((resolve) => {
          limiter(req as never, res as never, () => resolve('passed'));
          setTimeout(() => resolve(`refused ${res.statusCode}`), 50);
        });
      }),
    );
    expect(outcomes.filter((o) => o === 'passed')).toHaveLength(3);
    expect(outcomes.filter((o) => o === 'refused 429')).toHaveLength(5);
  });

  it('counts each key in its own window and forgets expired windows', () => {
    const store = new SnapshotMemoryStore();
    store.init({ windowMs: 1_000 } as never);
    expect(store.increment('a', 0).totalHits).toBe(1);
    expect(store.increment('a', 500).totalHits).toBe(2);
    expect(store.increment('b', 500).totalHits).toBe(1);
    expect(store.increment('a', 1_000).totalHits).toBe(1);
    store.sweep(5_000);
    expect(store.increment('b', 5_000).totalHits).toBe(1);
    store.shutdown();
  });
});
