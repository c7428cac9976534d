// Over 300 lines because its cases share one started system (a few seconds to start per file); split by area only where that cost pays.
import mongoose from 'mongoose';
import { call, startSystem, tenantWithKey, type System } from '../harness/system';

describe('companies through the gateway', () => {
  let sys: System;
  let gw: string;
  let a: { key: string; tenantId: string };
  let b: { key: string };
  const scopes = ['companies:read', 'companies:write'];

  beforeAll(async () => {
    sys = await startSystem();
    gw = sys.gateways[0]!.url;
    // Generous limits: rate limiting has its own suite, this one sends bursts on purpose.
    a = await tenantWithKey(gw, { scopes, rateLimitPerSecond: 10_000 });
    b = await tenantWithKey(gw, { scopes, rateLimitPerSecond: 10_000 });
  });
  afterAll(() => sys.stop());

  const create = (key: string, body: unknown, headers?: Record<string, string>) =>
    call(`${gw}/api/v1/companies`, { key, body, ...(headers && { headers }) });

  it('creates, reads, patches, lists and deletes a company', async () => {
    const created = await create(a.key, {
      name: 'Sunrise Clinic',
      countryIso: 'us',
      timezone: 'Europe/Berlin',
      businessHours: { mon: ['09:00-17:00'] },
    });
    expect(created.status).toBe(201);
    const company = created.body.company;
    expect(company).toMatchObject({
      name: 'Sunrise Clinic',
      countryIso: 'US',
      timezone: 'Europe/Berlin',
      mobile: null,
      businessHours: { mon: ['09:00-17:00'] },
    });
    expect(Object.keys(company).sort()).toEqual(
      [
        'businessHours',
        'countryCode',
        'countryIso',
        'createdAt',
        'description',
        'id',
        'industry',
        'mobile',
        'name',
        'timezone',
        'updatedAt',
        'website',
      ].sort(),
    );

    const got = await call(`${gw}/api/v1/companies/${company.id}`, { key: a.key });
    expect(got.body.company).toEqual(company);

    const patched = await call(`${gw}/api/v1/companies/${company.id}`, {
      method: 'PATCH',
      key: a.key,
      body: { industry: 'health', website: 'https://sunrise.example' },
    });
    expect(patched.status).toBe(200);
    expect(patched.body.company).toMatchObject({
      name: 'Sunrise Clinic',
      industry: 'health',
      website: 'https://sunrise.example',
    });

    // null removes a field; the name cannot be removed.
    const cleared = await call(`${gw}/api/v1/companies/${company.id}`, {
      method: 'PATCH',
      key: a.key,
      body: { website: null, timezone: null },
    });
    expect(cleared.status).toBe(200);
    expect(cleared.body.company).toMatchObject({
      name: 'Sunrise Clinic',
      industry: 'health',
      website: null,
      timezone: null,
    });
    const noName = await call(`${gw}/api/v1/companies/${company.id}`, {
      method: 'PATCH',
      key: a.key,
      body: { name: null },
    });
    expect({ status: noName.status, reason: noName.body.reasonCode }).toEqual({
      status: 400,
      reason: 'validation_error',
    });

    const list = await call(`${gw}/api/v1/companies?page=1&limit=10`, { key: a.key });
    expect(list.status).toBe(200);
    expect(list.body.companies.map((c: { id: string }) => c.id)).toContain(company.id);
    expect(list.body.pagination).toMatchObject({
      page: 1,
      limit: 10,
      total: list.body.companies.length,
      totalPages: 1,
      hasMore: false,
    });

    const del = await call(`${gw}/api/v1/companies/${company.id}`, { method: 'DELETE', key: a.key });
    expect(del.status).toBe(204);
    expect((await call(`${gw}/api/v1/companies/${company.id}`, { key: a.key })).status).toBe(404);
  });

  it("hides one tenant's companies from another (404, never 403)", async () => {
    const { body } = await create(a.key, { name: 'Tenant A only' });
    const id = body.company.id;
    for (const [method, payload] of [
      ['GET', undefined],
      ['PATCH', { name: 'x' }],
      ['DELETE', undefined],
    ] as const) {
      const res = await call(`${gw}/api/v1/companies/${id}`, { method, key: b.key, ...(payload && { body: payload }) });
      expect(res.status).toBe(404);
      expect(res.body.reasonCode).toBe('not_found');
    }
    const listB = await call(`${gw}/api/v1/companies?limit=100`, { key: b.key });
    expect(JSON.stringify(listB.body)).not.toContain(id);
  });

  it('refuses omniChannelSettings on create and patch with 400, storing nothing', async () => {
    const before = (await call(`${gw}/api/v1/companies?limit=100`, { key: a.key })).body.pagination.total;
    const res = await create(a.key, { name: 'Sneaky', omniChannelSettings: { smtp: { password: 'x' } } });
    expect(res.status).toBe(400);
    expect(res.body.reasonCode).toBe('validation_error');
    expect(res.body.error).toMatch(/omniChannelSettings/);
    expect((await call(`${gw}/api/v1/companies?limit=100`, { key: a.key })).body.pagination.total).toBe(before);

    const { body } = await create(a.key, { name: 'Target' });
    const patch = await call(`${gw}/api/v1/companies/${body.company.id}`, {
      method: 'PATCH',
      key: a.key,
      body: { omniChannelSettings: {} },
    });
    expect(patch.status).toBe(400);
    expect(patch.body.details).toEqual([{ path: 'body', message: expect.stringMatching(/omniChannelSettings/) }]);
  });

  it.each([
    ['unknown field in PATCH', 'PATCH', { colour: 'red' }],
    ['empty PATCH', 'PATCH', {}],
    ['wrong type', 'PATCH', { name: 42 }],
    ['bad time zone', 'PATCH', { timezone: 'Mars/Olympus' }],
    ['bad website', 'PATCH', { website: 'ftp://x' }],
    ['bad country', 'PATCH', { countryIso: 'USA' }],
  ])('answers 400 validation_error with details for %s', async (_n, method, payload) => {
    const { body } = await create(a.key, { name: 'Valid' });
    const res = await call(`${gw}/api/v1/companies/${body.company.id}`, { method, key: a.key, body: payload });
    expect(res.status).toBe(400);
    expect(res.body.reasonCode).toBe('validation_error');
    expect(res.body.details.length).toBeGreaterThan(0);
  });

  it('answers bad requests with their documented codes, never a 500', async () => {
    const cases: [string, Promise<{ status: number; body: any }>, number, string][] = [
      ['malformed JSON', call(`${gw}/api/v1/companies`, { key: a.key, raw: '{"name": ' }), 400, 'validation_error'],
      [
        'wrong content type',
        call(`${gw}/api/v1/companies`, {
          key: a.key,
          raw: 'name=x',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
        }),
        415,
        'unsupported_media_type',
      ],
      [
        'huge body',
        call(`${gw}/api/v1/companies`, { key: a.key, body: { name: 'x', description: 'y'.repeat(300_000) } }),
        413,
        'payload_too_large',
      ],
      ['missing body', call(`${gw}/api/v1/companies`, { method: 'POST', key: a.key }), 400, 'validation_error'],
      ['JSON array body', call(`${gw}/api/v1/companies`, { key: a.key, raw: '[1,2]' }), 400, 'validation_error'],
      ['id that is not an id', call(`${gw}/api/v1/companies/not-an-id`, { key: a.key }), 400, 'validation_error'],
      ['page 0', call(`${gw}/api/v1/companies?page=0`, { key: a.key }), 400, 'validation_error'],
      ['limit 101', call(`${gw}/api/v1/companies?limit=101`, { key: a.key }), 400, 'validation_error'],
      ['limit not a number', call(`${gw}/api/v1/companies?limit=ten`, { key: a.key }), 400, 'validation_error'],
      ['unknown company', call(`${gw}/api/v1/companies/0123456789abcdef01234567`, { key: a.key }), 404, 'not_found'],
    ];
    for (const [name, pending, status, reasonCode] of cases) {
      const res = await pending;
      expect({ name, status: res.status, reasonCode: res.body?.reasonCode }).toEqual({ name, status, reasonCode });
      expect(JSON.stringify(res.body)).not.toMatch(/at .*\.js:\d+/);
    }
  });

  it('stores any JSON object as businessHours and returns it unchanged (nested arrays, $ and dotted keys)', async () => {
    const businessHours = {
      mon: [
        ['09:00', '12:00'],
        ['13:00', '17:00'],
      ],
      $note: 'closed on holidays',
      'tue.wed': { open: true },
      '': null,
    };
    const created = await create(a.key, { name: 'Odd hours' }, { 'Idempotency-Key': `odd-${Date.now()}` });
    const patched = await call(`${gw}/api/v1/companies/${created.body.company.id}`, {
      method: 'PATCH',
      key: a.key,
      body: { businessHours },
    });
    expect(patched.status).toBe(200);
    expect(patched.body.company.businessHours).toEqual(businessHours);
    const got = await call(`${gw}/api/v1/companies/${created.body.company.id}`, { key: a.key });
    expect(got.body.company.businessHours).toEqual(businessHours);
    const replayKey = `odd-create-${Date.now()}`;
    const first = await create(a.key, { name: 'Odd create', businessHours }, { 'Idempotency-Key': replayKey });
    const replay = await create(a.key, { name: 'Odd create', businessHours }, { 'Idempotency-Key': replayKey });
    expect(first.status).toBe(201);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body).toEqual(first.body);
  });

  it('refuses businessHours over 8 KiB', async () => {
    const res = await create(a.key, { name: 'Verbose', businessHours: { note: 'x'.repeat(9_000) } });
    expect(res.status).toBe(400);
    expect(res.body.details[0].path).toBe('body.businessHours');
  });

  it('answers 405 with Allow for a method a known path does not have', async () => {
    const res = await call(`${gw}/api/v1/companies`, { method: 'PUT', key: a.key, body: { name: 'x' } });
    expect(res.status).toBe(405);
    expect(res.body.reasonCode).toBe('method_not_allowed');
    expect(res.headers.get('allow')).toBe('GET, POST, HEAD');
  });

  describe('Idempotency-Key on POST', () => {
    it('replays the first answer for the same key and body, with Idempotent-Replayed', async () => {
      const key = `idem-${Date.now()}`;
      const first = await create(a.key, { name: 'Once only' }, { 'Idempotency-Key': key });
      const second = await create(a.key, { name: 'Once only' }, { 'Idempotency-Key': key });
      expect(first.status).toBe(201);
      expect(second.status).toBe(201);
      expect(second.body).toEqual(first.body);
      expect(second.headers.get('idempotent-replayed')).toBe('true');
      expect(first.headers.get('idempotent-replayed')).toBeNull();
      const list = await call(`${gw}/api/v1/companies?limit=100`, { key: a.key });
      expect(list.body.companies.filter((c: { name: string }) => c.name === 'Once only')).toHaveLength(1);
    });

    it('answers 422 idempotency_key_reused for the same key with another body', async () => {
      const key = `idem-reuse-${Date.now()}`;
      expect((await create(a.key, { name: 'First body' }, { 'Idempotency-Key': key })).status).toBe(201);
      const res = await create(a.key, { name: 'Second body' }, { 'Idempotency-Key': key });
      expect(res.status).toBe(422);
      expect(res.body.reasonCode).toBe('idempotency_key_reused');
    });

    it('scopes keys per tenant: the same Idempotency-Key in another tenant is independent', async () => {
      const key = `idem-shared-${Date.now()}`;
      const ra = await create(a.key, { name: 'A' }, { 'Idempotency-Key': key });
      const rb = await create(b.key, { name: 'B' }, { 'Idempotency-Key': key });
      expect(rb.status).toBe(201);
      expect(rb.headers.get('idempotent-replayed')).toBeNull();
      expect(rb.body.company.id).not.toBe(ra.body.company.id);
    });

    it('answers exactly one 409 idempotency_in_progress while the first request runs, then replays its answer', async () => {
      const key = `idem-race-${Date.now()}`;
      const conn = await mongoose.createConnection(process.env.MONGO_URL!, { dbName: sys.gatewayDb }).asPromise();
      const companies = sys.companies.child;
      try {
        // The companies service is frozen, so the first request holds the key inside its gRPC call.
        companies.kill('SIGSTOP');
        const first = create(a.key, { name: 'Raced' }, { 'Idempotency-Key': key });
        // Only this request of the tenant holds a key now (records store the tenant, not always the key).
        const claimed = () =>
          conn.collection('idempotency_records').countDocuments({ tenantId: a.tenantId, state: 'in_flight' });
        for (let i = 0; i < 100 && (await claimed()) === 0; i++) await new Promise((r) => setTimeout(r, 20));
        expect(await claimed()).toBe(1);
        const during = await create(a.key, { name: 'Raced' }, { 'Idempotency-Key': key });
        companies.kill('SIGCONT');
        const done = await first;
        const after = await create(a.key, { name: 'Raced' }, { 'Idempotency-Key': key });

        expect(during.status).toBe(409);
        expect(during.body.reasonCode).toBe('idempotency_in_progress');
        expect(done.status).toBe(201);
        expect(after.status).toBe(201);
        expect(after.headers.get('idempotent-replayed')).toBe('true');
        expect(after.body).toEqual(done.body);
        const list = await call(`${gw}/api/v1/companies?limit=100`, { key: a.key });
        expect(list.body.companies.filter((c: { name: string }) => c.name === 'Raced')).toHaveLength(1);
      } finally {
        companies.kill('SIGCONT');
        await conn.close();
      }
    });

    it('refuses an Idempotency-Key over 255 characters', async () => {
      const res = await create(a.key, { name: 'x' }, { 'Idempotency-Key': 'k'.repeat(256) });
      expect(res.status).toBe(400);
      expect(res.body.reasonCode).toBe('validation_error');
    });
  });
});
