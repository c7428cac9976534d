import { ADMIN_TOKEN, call, startSystem, type System } from '../harness/system';

// The operator API exactly as ../shared/guide/operator-api.md states it.
describe('operator API: tenants, key requests, keys, kill switch', () => {
  let sys: System;
  let gw: string;
  let tenantId: string;

  beforeAll(async () => {
    sys = await startSystem();
    gw = sys.gateways[0]!.url;
    const t = await call(`${gw}/admin/v1/tenants`, { admin: true, body: { name: 'Acme Health' } });
    expect(t.status).toBe(201);
    expect(t.body.tenant).toEqual({ id: expect.any(String), name: 'Acme Health', createdAt: expect.any(String) });
    tenantId = t.body.tenant.id;
  });
  afterAll(() => sys.stop());

  it('refuses a missing or wrong operator token with 401', async () => {
    expect((await call(`${gw}/admin/v1/kill-switch`)).status).toBe(401);
    const wrong = await call(`${gw}/admin/v1/kill-switch`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}x` } });
    expect(wrong.status).toBe(401);
    expect(wrong.body.reasonCode).toBe('unauthorized');
  });

  it('issues a key with the default scopes, shown once, that works at once', async () => {
    const res = await call(`${gw}/admin/v1/tenants/${tenantId}/api-keys`, {
      admin: true,
      body: { name: 'CRM sync', mode: 'sandbox' },
    });
    expect(res.status).toBe(201);
    expect(res.body.apiKey).toMatchObject({
      name: 'CRM sync',
      mode: 'sandbox',
      status: 'active',
      createdAt: expect.any(String),
    });
    expect(res.body.apiKey.scopes.sort()).toEqual([
      'calls:read',
      'credits:read',
      'inbound:read',
      'inbound:write',
      'leads:read',
      'leads:write',
      'webhooks:write',
    ]);
    expect(res.body.key).toMatch(/^sk_sandbox_/);
    expect(JSON.stringify(res.body.apiKey)).not.toContain(res.body.key);
    const ping = await call(`${gw}/api/v1/ping`, { key: res.body.key });
    expect(ping.body).toMatchObject({ ok: true, tenantId, mode: 'sandbox' });
  });

  it('refuses an empty scope list, unknown scopes and unknown tenants', async () => {
    const empty = await call(`${gw}/admin/v1/tenants/${tenantId}/api-keys`, {
      admin: true,
      body: { name: 'k', mode: 'live', scopes: [] },
    });
    expect(empty.status).toBe(400);
    expect(empty.body.reasonCode).toBe('validation_error');
    const unknown = await call(`${gw}/admin/v1/tenants/${tenantId}/api-keys`, {
      admin: true,
      body: { name: 'k', mode: 'live', scopes: ['everything'] },
    });
    expect(unknown.status).toBe(400);
    const noTenant = await call(`${gw}/admin/v1/tenants/0123456789abcdef01234567/api-keys`, {
      admin: true,
      body: { name: 'k', mode: 'live' },
    });
    expect(noTenant.status).toBe(404);
    const badMode = await call(`${gw}/admin/v1/tenants/${tenantId}/api-keys`, {
      admin: true,
      body: { name: 'k', mode: 'test' },
    });
    expect(badMode.status).toBe(400);
  });

  it('files a request, lists it as pending, approves it once with on-request scopes', async () => {
    const filed = await call(`${gw}/admin/v1/tenants/${tenantId}/api-key-requests`, {
      admin: true,
      body: { name: 'Companies sync', mode: 'live', purpose: 'sync clinic profiles' },
    });
    expect(filed.status).toBe(201);
    expect(filed.body.request).toMatchObject({
      name: 'Companies sync',
      mode: 'live',
      purpose: 'sync clinic profiles',
      status: 'pending',
    });
    const id = filed.body.request.id;

    const pending = await call(`${gw}/admin/v1/api-key-requests?status=pending`, { admin: true });
    expect(pending.body.requests.map((r: { id: string }) => r.id)).toContain(id);

    const approved = await call(`${gw}/admin/v1/api-key-requests/${id}/approve`, {
      admin: true,
      body: { scopes: ['companies:read', 'companies:write'] },
    });
    expect(approved.status).toBe(201);
    expect(approved.body.apiKey).toMatchObject({ status: 'active', scopes: ['companies:read', 'companies:write'] });
    expect(approved.body.key).toMatch(/^sk_live_/);
    expect((await call(`${gw}/api/v1/companies`, { key: approved.body.key })).status).toBe(200);

    const again = await call(`${gw}/admin/v1/api-key-requests/${id}/approve`, { admin: true, body: {} });
    expect(again.status).toBe(409);
    const after = await call(`${gw}/admin/v1/api-key-requests?status=pending`, { admin: true });
    expect(after.body.requests.map((r: { id: string }) => r.id)).not.toContain(id);
  });

  it('rejects a request with a reason; it can then not be approved', async () => {
    const filed = await call(`${gw}/admin/v1/tenants/${tenantId}/api-key-requests`, {
      admin: true,
      body: { name: 'x', mode: 'live', purpose: 'p' },
    });
    const id = filed.body.request.id;
    const rejected = await call(`${gw}/admin/v1/api-key-requests/${id}/reject`, {
      admin: true,
      body: { reason: 'not needed' },
    });
    expect(rejected.status).toBe(200);
    expect(rejected.body.request).toMatchObject({ status: 'rejected', reason: 'not needed' });
    expect((await call(`${gw}/admin/v1/api-key-requests/${id}/approve`, { admin: true, body: {} })).status).toBe(409);
  });

  it('renames a key without changing its secret, and deactivates and reactivates it', async () => {
    const issued = await call(`${gw}/admin/v1/tenants/${tenantId}/api-keys`, {
      admin: true,
      body: { name: 'old name', mode: 'live' },
    });
    const { key } = issued.body;
    const id = issued.body.apiKey.id;
    const renamed = await call(`${gw}/admin/v1/api-keys/${id}`, {
      method: 'PATCH',
      admin: true,
      body: { name: 'new name' },
    });
    expect(renamed.body.apiKey).toMatchObject({ name: 'new name', status: 'active' });
    expect((await call(`${gw}/api/v1/ping`, { key })).status).toBe(200);

    const off = await call(`${gw}/admin/v1/api-keys/${id}`, {
      method: 'PATCH',
      admin: true,
      body: { status: 'inactive' },
    });
    expect(off.body.apiKey.status).toBe('inactive');
    expect((await call(`${gw}/api/v1/ping`, { key })).status).toBe(401);

    await call(`${gw}/admin/v1/api-keys/${id}`, { method: 'PATCH', admin: true, body: { status: 'active' } });
    expect((await call(`${gw}/api/v1/ping`, { key })).status).toBe(200);

    expect(
      (await call(`${gw}/admin/v1/api-keys/${id}`, { method: 'PATCH', admin: true, body: { status: 'revoked' } }))
        .status,
    ).toBe(400);
    expect(
      (
        await call(`${gw}/admin/v1/api-keys/0123456789abcdef01234567`, {
          method: 'PATCH',
          admin: true,
          body: { name: 'x' },
        })
      ).status,
    ).toBe(404);
  });

  it('kill switch: 503 api_globally_disabled on every tenant call, checked before the key; operator API unaffected', async () => {
    const issued = await call(`${gw}/admin/v1/tenants/${tenantId}/api-keys`, {
      admin: true,
      body: { name: 'k', mode: 'live' },
    });
    try {
      const on = await call(`${gw}/admin/v1/kill-switch`, { method: 'PUT', admin: true, body: { enabled: true } });
      expect(on.body).toEqual({ enabled: true });
      expect((await call(`${gw}/admin/v1/kill-switch`, { admin: true })).body).toEqual({ enabled: true });
      for (const res of [
        await call(`${gw}/api/v1/ping`, { key: issued.body.key }),
        await call(`${gw}/api/v1/ping`),
        await call(`${gw}/api/v1/companies`, { key: 'junk' }),
      ]) {
        expect(res.status).toBe(503);
        expect(res.body.reasonCode).toBe('api_globally_disabled');
      }
      expect((await call(`${gw}/admin/v1/tenants`, { admin: true, body: { name: 'still works' } })).status).toBe(201);
    } finally {
      await call(`${gw}/admin/v1/kill-switch`, { method: 'PUT', admin: true, body: { enabled: false } });
    }
    expect((await call(`${gw}/api/v1/ping`, { key: issued.body.key })).status).toBe(200);
  });
});
