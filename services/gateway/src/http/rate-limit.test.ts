import type { Response } from 'express';
import type { AuthenticatedKey } from '../auth/key-cache';
import { FixedWindowLimiter } from './rate-limit';

const key = (keyId: string, rateLimitPerSecond?: number): AuthenticatedKey => ({
  keyId,
  tenantId: 't',
  mode: 'live',
  scopes: new Set(),
  status: 'active',
  ...(rateLimitPerSecond !== undefined && { rateLimitPerSecond }),
});

/** The part of a response the limiter writes: headers, and the 429 answer. */
function response() {
  const headers: Record<string, string> = {};
  const res = {
    statusCode: 200,
    body: '',
    setHeader: (name: string, value: unknown) => void (headers[name.toLowerCase()] = String(value)),
    end: (payload?: string) => void (res.body = payload ?? ''),
    headers,
  };
  return res;
}

describe('per-key fixed-window rate limit', () => {
  let limiter: FixedWindowLimiter;
  beforeEach(() => (limiter = new FixedWindowLimiter(50)));
  afterEach(() => limiter.close());

  const admit = (auth: AuthenticatedKey, now: number) => {
    const res = response();
    const admitted = limiter.admit(res as unknown as Response, auth, now);
    return { admitted, res };
  };

  it("admits exactly the key's limit in one window and refuses the rest with 429 and Retry-After", () => {
    const outcomes = Array.from({ length: 8 }, (_, i) => admit(key('k', 3), 1_000 + i));
    expect(outcomes.map((o) => o.admitted)).toEqual([true, true, true, false, false, false, false, false]);
    expect(outcomes.map((o) => o.res.headers['ratelimit-remaining'])).toEqual(['2', '1', '0', '0', '0', '0', '0', '0']);
    const first = outcomes[0]!.res;
    expect(first.headers).toMatchObject({
      'ratelimit-policy': '3;w=1',
      'ratelimit-limit': '3',
      'ratelimit-reset': '1',
    });
    expect(first.headers['retry-after']).toBeUndefined();
    const refused = outcomes[3]!.res;
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['retry-after']).toBe('1');
    expect(JSON.parse(refused.body)).toMatchObject({ reasonCode: 'rate_limited' });
  });

  it('counts each key on its own, with the default limit for a key without one', () => {
    for (let i = 0; i < 3; i++) admit(key('busy', 3), 0);
    expect(admit(key('busy', 3), 0).admitted).toBe(false);
    expect(admit(key('quiet', 3), 0).admitted).toBe(true);
    const unlimited = Array.from({ length: 50 }, () => admit(key('default'), 0).admitted);
    expect(unlimited.every(Boolean)).toBe(true);
    expect(admit(key('default'), 0)).toMatchObject({ admitted: false, res: { headers: { 'ratelimit-limit': '50' } } });
  });

  it('opens a new window a second after the first request of the last one', () => {
    for (let i = 0; i < 4; i++) admit(key('k', 3), 10_000 + i * 100);
    expect(admit(key('k', 3), 10_999).admitted).toBe(false);
    const next = admit(key('k', 3), 11_000);
    expect(next.admitted).toBe(true);
    expect(next.res.headers['ratelimit-remaining']).toBe('2');
  });
});
