import { call, startSystem, tenantWithKey, type System } from '../harness/system';

// Two gateway replicas. The backstops (periodic re-read, cache TTL) are set to ten minutes, so
// only the Kafka control topic (and, for the kill switch, a change stream on its document) can
// carry a change to the other replica within a second.
describe('two gateway replicas', () => {
  let sys: System;
  let a: string;
  let b: string;

  beforeAll(async () => {
    sys = await startSystem({ gateways: 2, gatewayEnv: { CONTROL_RESYNC_MS: '600000', KEY_CACHE_TTL_MS: '600000' } });
    [a, b] = sys.gateways.map((g) => g.url) as [string, string];
  });
  afterAll(() => sys.stop());

  /** Polls until `check` holds and returns how long that took. */
  async function msUntil(check: () => Promise<boolean>, limitMs = 5_000): Promise<number> {
    const started = Date.now();
    while (!(await check())) {
      if (Date.now() - started > limitMs) throw new Error(`not observed within ${limitMs} ms`);
      await new Promise((r) => setTimeout(r, 20));
    }
    return Date.now() - started;
  }

  it('a kill switch flipped on one replica is obeyed by the other within 1 s, and lifted likewise', async () => {
    const { key } = await tenantWithKey(a);
    expect((await call(`${b}/api/v1/ping`, { key })).status).toBe(200);
    try {
      expect(
        (await call(`${a}/admin/v1/kill-switch`, { method: 'PUT', admin: true, body: { enabled: true } })).status,
      ).toBe(200);
      const onMs = await msUntil(async () => (await call(`${b}/api/v1/ping`, { key })).status === 503);
      expect(onMs).toBeLessThan(1_000);
      expect((await call(`${b}/admin/v1/kill-switch`, { admin: true })).body).toEqual({ enabled: true });
    } finally {
      await call(`${a}/admin/v1/kill-switch`, { method: 'PUT', admin: true, body: { enabled: false } });
    }
    const offMs = await msUntil(async () => (await call(`${b}/api/v1/ping`, { key })).status === 200);
    expect(offMs).toBeLessThan(1_000);
  });

  it('a key deactivated through one replica is refused by the other within 1 s despite its cache', async () => {
    const { key, keyId } = await tenantWithKey(a);
    // Warm both replicas' key caches.
    expect((await call(`${a}/api/v1/ping`, { key })).status).toBe(200);
    expect((await call(`${b}/api/v1/ping`, { key })).status).toBe(200);
    const res = await call(`${a}/admin/v1/api-keys/${keyId}`, {
      method: 'PATCH',
      admin: true,
      body: { status: 'inactive' },
    });
    expect(res.status).toBe(200);
    const ms = await msUntil(async () => (await call(`${b}/api/v1/ping`, { key })).status === 401);
    expect(ms).toBeLessThan(1_000);
    expect((await call(`${a}/api/v1/ping`, { key })).status).toBe(401);
  });

  it('a replica started while the kill switch is on refuses tenant calls from its first request', async () => {
    const { key } = await tenantWithKey(a);
    await call(`${a}/admin/v1/kill-switch`, { method: 'PUT', admin: true, body: { enabled: true } });
    try {
      const c = await sys.startGateway({ CONTROL_RESYNC_MS: '600000' });
      expect((await call(`${c.url}/api/v1/ping`, { key })).status).toBe(503);
    } finally {
      await call(`${a}/admin/v1/kill-switch`, { method: 'PUT', admin: true, body: { enabled: false } });
    }
  });
});
