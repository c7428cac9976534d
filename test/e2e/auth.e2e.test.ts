import apiRelease from '../../services/gateway/src/api-release.json';
import { generateKey } from '../../services/gateway/src/auth/key-format';
import { ADMIN_TOKEN, call, startSystem, tenantWithKey, type System } from '../harness/system';

// Through the real gateway process: kill switch → key → scope → rate limit → validation.
describe('gateway edge: keys, scopes, rate limits, bad input', () => {
  let sys: System;
  let gw: string;
  let key: string;
  let keyId: string;
  let tenantId: string;

  beforeAll(async () => {
    sys = await startSystem();
    gw = sys.gateways[0]!.url;
    ({ key, keyId, tenantId } = await tenantWithKey(gw, { scopes: ['companies:read', 'calls:read'] }));
  });
  afterAll(() => sys.stop());

  it('answers ping with the key identity, with Bearer or X-API-Key', async () => {
    const bearer = await call(`${gw}/api/v1/ping`, { key });
    expect(bearer.status).toBe(200);
    expect(bearer.body).toEqual({ ok: true, tenantId, keyId, mode: 'live', scopes: ['companies:read', 'calls:read'] });
    const header = await call(`${gw}/api/v1/ping`, { headers: { 'X-API-Key': key } });
    expect(header.status).toBe(200);
    expect(header.headers.get('x-request-id')).toBeTruthy();
  });

  it.each([
    ['no key', {}],
    ['a malformed key', { authorization: 'Bearer not-a-key' }],
    ['a key with a bad checksum', { authorization: 'Bearer sk_live_' + 'A'.repeat(49) }],
    ['a Basic authorization', { authorization: 'Basic dXNlcjpwYXNz' }],
  ])('refuses %s with 401 unauthorized', async (_name, headers) => {
    const res = await call(`${gw}/api/v1/ping`, { headers: headers });
    expect(res.status).toBe(401);
    expect(res.body.reasonCode).toBe('unauthorized');
    expect(typeof res.body.error).toBe('string');
  });

  it('refuses a well-formed key with a valid checksum that was never issued', async () => {
    const res = await call(`${gw}/api/v1/ping`, { key: generateKey('live') });
    expect(res.status).toBe(401);
    expect(res.body).toMatchObject({ reasonCode: 'unauthorized', error: 'invalid API key' });
  });

  it('refuses a deactivated key', async () => {
    const other = await tenantWithKey(gw);
    expect((await call(`${gw}/api/v1/ping`, { key: other.key })).status).toBe(200);
    await call(`${gw}/admin/v1/api-keys/${other.keyId}`, {
      method: 'PATCH',
      admin: true,
      body: { status: 'inactive' },
    });
    const res = await call(`${gw}/api/v1/ping`, { key: other.key });
    expect(res.status).toBe(401);
    expect(res.body).toMatchObject({ reasonCode: 'unauthorized', error: 'API key is not active' });
  });

  it('never accepts a key in the query string, even a valid one', async () => {
    const res = await call(`${gw}/api/v1/ping?api_key=${key}`);
    expect(res.status).toBe(401);
    expect(res.body.reasonCode).toBe('unauthorized');
    expect(res.body.error).toMatch(/header/);
  });

  it('does not accept the operator token as a tenant key, nor a tenant key on the operator API', async () => {
    expect((await call(`${gw}/api/v1/ping`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).status).toBe(401);
    const res = await call(`${gw}/admin/v1/kill-switch`, { key });
    expect(res.status).toBe(401);
    expect(res.body.reasonCode).toBe('unauthorized');
  });

  it('answers 403 forbidden naming exactly the missing scope', async () => {
    const res = await call(`${gw}/api/v1/companies`, { key, body: { name: 'x' } });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ error: expect.any(String), reasonCode: 'forbidden', missing: ['companies:write'] });
  });

  it('checks the scope before validating the body', async () => {
    const res = await call(`${gw}/api/v1/companies`, { key, raw: '{not json' });
    expect(res.status).toBe(403);
  });

  it('rate limits per key with 429, Retry-After and RateLimit headers', async () => {
    const limited = await tenantWithKey(gw, { rateLimitPerSecond: 3 });
    const results = await Promise.all(Array.from({ length: 8 }, () => call(`${gw}/api/v1/ping`, { key: limited.key })));
    const statuses = results.map((r) => r.status);
    expect({ statuses, onlyOkOrLimited: statuses.every((s) => s === 200 || s === 429) }).toMatchObject({
      onlyOkOrLimited: true,
    });
    const ok = results.filter((r) => r.status === 200);
    const tooMany = results.filter((r) => r.status === 429);
    // The key's window opens at its first request; the burst of 8 lands well inside one second.
    expect({ ok: ok.length, tooMany: tooMany.length }).toEqual({ ok: 3, tooMany: 5 });
    expect(tooMany[0]!.body.reasonCode).toBe('rate_limited');
    expect(Number(tooMany[0]!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(ok[0]!.headers.get('ratelimit-limit')).toBe('3');
    expect(ok[0]!.headers.get('ratelimit-remaining')).not.toBeNull();
    // Another key of the same tenant is not affected.
    expect((await call(`${gw}/api/v1/ping`, { key })).status).toBe(200);
  });

  it('records lastUsedAt for a key', async () => {
    const fresh = await tenantWithKey(gw);
    expect((await call(`${gw}/api/v1/ping`, { key: fresh.key })).status).toBe(200);
    let lastUsedAt: string | null = null;
    for (let i = 0; i < 50 && !lastUsedAt; i++) {
      const res = await call(`${gw}/admin/v1/api-keys/${fresh.keyId}`, {
        method: 'PATCH',
        admin: true,
        body: { name: 'renamed' },
      });
      lastUsedAt = res.body.apiKey.lastUsedAt;
      if (!lastUsedAt) await new Promise((r) => setTimeout(r, 100));
    }
    expect(lastUsedAt).not.toBeNull();
    expect(Date.now() - Date.parse(lastUsedAt!)).toBeLessThan(60_000);
  });

  it('answers unknown endpoints with 404 in the error body', async () => {
    const res = await call(`${gw}/api/v1/no-such-thing`, { key });
    expect(res.status).toBe(404);
    expect(res.body.reasonCode).toBe('not_found');
  });

  it('serves the OpenAPI 3.1 document and the reference page', async () => {
    const doc = await call(`${gw}/api/v1/openapi.json`);
    expect(doc.status).toBe(200);
    expect(doc.body.openapi).toBe('3.1.0');
    // The version of the tenant API as last released (make release writes it).
    expect(doc.body.info.version).toBe(apiRelease.version);
    expect(Object.keys(doc.body.paths)).toEqual(
      expect.arrayContaining(['/api/v1/ping', '/api/v1/companies', '/api/v1/companies/{id}']),
    );
    expect(doc.body.components.securitySchemes.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(doc.body.paths['/api/v1/companies'].post.responses['403']).toBeDefined();
    const page = await fetch(`${gw}/docs/`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('swagger-ui');
  });

  it('has liveness and readiness probes', async () => {
    expect((await call(`${gw}/healthz`)).status).toBe(200);
    expect((await call(`${gw}/readyz`)).body).toEqual({ status: 'ready' });
  });
});
