import { request } from 'node:http';
import { connect } from 'node:net';
import { ADMIN_TOKEN, call, startSystem, tenantWithKey, type System } from '../harness/system';

/** A request with raw header lines, so a header can be sent twice (fetch would merge them). */
function raw(
  url: string,
  headerLines: string[],
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: any }> {
  return new Promise((resolve, reject) => {
    // Raw header lines get no Host of their own; HTTP/1.1 requires one.
    const req = request(url, { method: 'GET', headers: ['Host', new URL(url).host, ...headerLines] }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text ? JSON.parse(text) : undefined }),
      );
    });
    req.once('error', reject);
    req.end();
  });
}

/** Writes a request by hand on a fresh connection and reads until the server closes it. */
function rawRequest(
  url: string,
  head: string,
): Promise<{ status: number; headers: Record<string, string>; body: any; raw: string }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write(head));
    let data = '';
    socket.on('data', (b: Buffer) => (data += b.toString('latin1')));
    // The server may close while the rest of a large request is still being written.
    socket.on('error', (err: NodeJS.ErrnoException) => (data ? undefined : reject(err)));
    socket.on('close', () => {
      const [top = '', text = ''] = data.split('\r\n\r\n');
      const [statusLine = '', ...lines] = top.split('\r\n');
      const headers = Object.fromEntries(
        lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
      );
      let body: any;
      try {
        body = text ? JSON.parse(text) : undefined;
      } catch {
        body = text;
      }
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body, raw: data });
    });
  });
}

// The edge's answers to ambiguous credentials, and the headers every answer carries.
describe('edge hardening', () => {
  let sys: System;
  let gw: string;
  let a: { key: string; tenantId: string };
  let b: { key: string };

  beforeAll(async () => {
    sys = await startSystem();
    gw = sys.gateways[0]!.url;
    a = await tenantWithKey(gw, { scopes: ['companies:read', 'companies:write'] });
    b = await tenantWithKey(gw, { scopes: ['companies:read'] });
  });
  afterAll(() => sys.stop());

  it('refuses conflicting or repeated credentials with 401 and a WWW-Authenticate challenge', async () => {
    const cases = {
      twoAuthorization: ['Authorization', `Bearer ${a.key}`, 'Authorization', `Bearer ${b.key}`],
      sameKeyTwice: ['Authorization', `Bearer ${a.key}`, 'Authorization', `Bearer ${a.key}`],
      authorizationAndOtherTenantsKey: ['Authorization', `Bearer ${a.key}`, 'X-API-Key', b.key],
      authorizationAndInvalidKey: ['Authorization', `Bearer ${a.key}`, 'X-API-Key', 'sk_live_nonsense'],
      twoApiKeys: ['X-API-Key', a.key, 'X-API-Key', a.key],
    };
    for (const [name, lines] of Object.entries(cases)) {
      const res = await raw(`${gw}/api/v1/ping`, lines);
      expect({
        name,
        status: res.status,
        reason: res.body?.reasonCode,
        challenge: res.headers['www-authenticate'],
      }).toEqual({
        name,
        status: 401,
        reason: 'unauthorized',
        challenge: 'Bearer',
      });
    }
    expect((await raw(`${gw}/api/v1/ping`, ['X-API-Key', a.key])).status).toBe(200);
    const admin = await raw(`${gw}/admin/v1/kill-switch`, [
      'Authorization',
      `Bearer ${ADMIN_TOKEN}`,
      'Authorization',
      `Bearer ${ADMIN_TOKEN}`,
    ]);
    expect(admin.status).toBe(401);
  });

  it('marks every API answer, the one showing a new key included, as not cacheable and not sniffable', async () => {
    const ping = await call(`${gw}/api/v1/ping`, { key: a.key });
    const issued = await call(`${gw}/admin/v1/tenants/${a.tenantId}/api-keys`, {
      admin: true,
      body: { name: 'k', mode: 'sandbox' },
    });
    const refused = await call(`${gw}/api/v1/ping`);
    for (const [name, res, status] of [
      ['ping', ping, 200],
      ['issued key', issued, 201],
      ['refused', refused, 401],
    ] as const) {
      expect({
        name,
        status: res.status,
        cache: res.headers.get('cache-control'),
        sniff: res.headers.get('x-content-type-options'),
      }).toEqual({
        name,
        status,
        cache: 'no-store',
        sniff: 'nosniff',
      });
    }
  });

  it("keeps the reference page out of other sites' frames", async () => {
    const res = await fetch(`${gw}/docs/`);
    expect(res.status).toBe(200);
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    expect(res.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
  });

  it("serves the tenants' changelog the reference page links to, newest release first", async () => {
    const doc = (await call(`${gw}/api/v1/openapi.json`)).body as { info: { version: string; description: string } };
    expect(doc.info.description).toContain('[changelog](/docs/changelog)');
    const res = await fetch(`${gw}/docs/changelog`);
    expect([res.status, res.headers.get('content-type'), res.headers.get('x-frame-options')]).toEqual([
      200,
      'text/markdown; charset=utf-8',
      'DENY',
    ]);
    const page = await res.text();
    expect(page).toMatch(/^# Tenant API changelog/);
    // The version the document carries is the changelog's newest entry.
    expect(page.match(/^## (\S+) \(/m)?.[1]).toBe(doc.info.version);
  });

  it('accepts page and limit only as plain integers', async () => {
    for (const q of ['page=1e3', 'limit=%2B5', 'limit=5.0', 'page=0x10', 'page=', 'limit=1%2C2']) {
      const res = await call(`${gw}/api/v1/companies?${q}`, { key: a.key });
      expect({ q, status: res.status, reason: res.body?.reasonCode }).toEqual({
        q,
        status: 400,
        reason: 'validation_error',
      });
    }
    expect((await call(`${gw}/api/v1/companies?page=2&limit=5`, { key: a.key })).body.pagination).toMatchObject({
      page: 2,
      limit: 5,
    });
  });

  it('refuses control characters in names and texts, and keeps newlines in a description', async () => {
    for (const body of [
      { name: 'Clinic\u0000' },
      { name: 'Sunrise\u0007 Clinic' },
      { name: 'Ok', description: 'bad\u0001byte' },
    ]) {
      const res = await call(`${gw}/api/v1/companies`, { key: a.key, body });
      expect({ body, status: res.status, reason: res.body?.reasonCode }).toEqual({
        body,
        status: 400,
        reason: 'validation_error',
      });
    }
    const ok = await call(`${gw}/api/v1/companies`, {
      key: a.key,
      body: { name: 'Sunrise Clinic', description: 'Line one\nLine two\twith a tab' },
    });
    expect(ok.status).toBe(201);
    const tenant = await call(`${gw}/admin/v1/tenants`, { admin: true, body: { name: 'Acme\u0000' } });
    expect(tenant.status).toBe(400);
  });

  it('answers a 100 KB URL with 414 and a header block over 16 KiB with 431, each with the error body', async () => {
    const host = new URL(gw).host;
    const longUrl = await rawRequest(
      gw,
      `GET /api/v1/companies?q=${'a'.repeat(100 * 1024)} HTTP/1.1\r\nHost: ${host}\r\nX-API-Key: ${a.key}\r\n\r\n`,
    );
    expect({ status: longUrl.status, body: longUrl.body, type: longUrl.headers['content-type'] }).toEqual({
      status: 414,
      body: { error: expect.stringContaining('16384'), reasonCode: 'uri_too_long' },
      type: 'application/json; charset=utf-8',
    });
    expect(longUrl.headers['x-request-id']).toBeTruthy();
    const bigHeader = await rawRequest(
      gw,
      `GET /api/v1/ping HTTP/1.1\r\nHost: ${host}\r\nX-API-Key: ${a.key}\r\nX-Filler: ${'b'.repeat(20 * 1024)}\r\n\r\n`,
    );
    expect({ status: bigHeader.status, body: bigHeader.body }).toEqual({
      status: 431,
      body: { error: expect.any(String), reasonCode: 'headers_too_large' },
    });
    // A head just under the limit is served (ping defines no query parameter, so the filler is a header).
    const fits = await rawRequest(
      gw,
      `GET /api/v1/ping HTTP/1.1\r\nHost: ${host}\r\nX-API-Key: ${a.key}\r\nX-Filler: ${'c'.repeat(12 * 1024)}\r\nConnection: close\r\n\r\n`,
    );
    expect(fits.status).toBe(200);
  });

  it('answers a request with two Host headers with 400 and the error body (RFC 9112)', async () => {
    const host = new URL(gw).host;
    const two = await rawRequest(
      gw,
      `GET /api/v1/ping HTTP/1.1\r\nHost: ${host}\r\nHost: evil.example\r\nX-API-Key: ${a.key}\r\n\r\n`,
    );
    expect({ status: two.status, body: two.body }).toEqual({
      status: 400,
      body: { error: expect.stringMatching(/Host/), reasonCode: 'validation_error' },
    });
    const garbage = await rawRequest(gw, 'NOT HTTP AT ALL\r\n\r\n');
    expect({ status: garbage.status, reason: garbage.body?.reasonCode }).toEqual({
      status: 400,
      reason: 'validation_error',
    });
  });
});
