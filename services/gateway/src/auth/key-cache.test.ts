import { KeyCache, type AuthenticatedKey } from './key-cache';

const key = (keyId: string, status: AuthenticatedKey['status'] = 'active'): AuthenticatedKey => ({
  keyId,
  tenantId: 't',
  mode: 'live',
  scopes: new Set(['calls:read']),
  status,
});

describe('KeyCache', () => {
  it('loads a key once and serves it from memory afterwards', async () => {
    const load = jest.fn(async () => key('k1'));
    const cache = new KeyCache(load, { ttlMs: 60_000 });
    await cache.get('h1');
    await cache.get('h1');
    expect((await cache.get('h1'))?.keyId).toBe('k1');
    expect(load).toHaveBeenCalledTimes(1);
  });

  it('shares one load between concurrent misses', async () => {
    const load = jest.fn(async () => key('k1'));
    const cache = new KeyCache(load, { ttlMs: 60_000 });
    await Promise.all([cache.get('h1'), cache.get('h1'), cache.get('h1')]);
    expect(load).toHaveBeenCalledTimes(1);
  });

  it('re-reads a key after it was evicted by id', async () => {
    let status: AuthenticatedKey['status'] = 'active';
    const cache = new KeyCache(async () => key('k1', status), { ttlMs: 60_000 });
    expect((await cache.get('h1'))?.status).toBe('active');
    status = 'inactive';
    expect((await cache.get('h1'))?.status).toBe('active');
    cache.evictKeyId('k1');
    expect((await cache.get('h1'))?.status).toBe('inactive');
  });

  it('does not cache a load that raced with an eviction', async () => {
    let release!: () => void;
    let status: AuthenticatedKey['status'] = 'active';
    const load = jest.fn(async () => {
      const snapshot = status;
      await new Promise<void>((r) => (release = r));
      return key('k1', snapshot);
    });
    const cache = new KeyCache(load, { ttlMs: 60_000 });
    const stale = cache.get('h1');
    await new Promise((r) => setImmediate(r));
    status = 'inactive';
    cache.evictKeyId('k1');
    release();
    expect((await stale)?.status).toBe('active'); // that request began before the change
    const fresh = cache.get('h1');
    await new Promise((r) => setImmediate(r));
    release();
    expect((await fresh)?.status).toBe('inactive');
    expect(load).toHaveBeenCalledTimes(2);
  });

  it('remembers unknown hashes briefly so bad keys do not each hit the database', async () => {
    const load = jest.fn(async () => null);
    const cache = new KeyCache(load, { ttlMs: 60_000, negativeTtlMs: 1_000 });
    expect(await cache.get('unknown')).toBeNull();
    expect(await cache.get('unknown')).toBeNull();
    expect(load).toHaveBeenCalledTimes(1);
  });
});
