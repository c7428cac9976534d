// Over 300 lines because the cases of one module share its fixtures.
import { notFound } from '@voiceapi/kit/errors';
import { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import express from 'express';
import { mountRoutes } from './mount';
import { FixedWindowLimiter } from './rate-limit';
import { defineRoute, noBody } from './route';
import { json, serve, testKey, type Served } from './route-test-kit';
import { z } from './zod';

// The route layer in-process, with test-only routes: what a client sees for good and bad requests.

const Thing = z.object({ id: z.string(), name: z.string() });

const routes = [
  defineRoute({
    method: 'get',
    path: '/things',
    tag: 'Things',
    summary: 'List',
    query: z.object({ limit: z.coerce.number().int().min(1).max(10).default(5) }),
    responses: { 200: { description: 'Page', schema: z.object({ limit: z.number() }) } },
    handler: async ({ query }) => ({ status: 200, body: { limit: query.limit } }),
  }),
  defineRoute({
    method: 'post',
    path: '/things',
    tag: 'Things',
    summary: 'Create',
    scopes: ['companies:write'],
    body: z.strictObject({ name: z.string().min(1) }),
    responses: { 201: { description: 'Created', schema: z.object({ thing: Thing }) } },
    handler: async ({ body }) => ({ status: 201, body: { thing: { id: 't1', name: body.name } } }),
  }),
  defineRoute({
    method: 'get',
    path: '/things/{id}',
    tag: 'Things',
    summary: 'Get',
    params: z.object({ id: z.string().regex(/^t\d+$/, 'must look like t1') }),
    responses: { 200: { description: 'The thing', schema: z.object({ thing: Thing }) } },
    handler: async ({ params }) => {
      if (params.id === 't404') throw notFound('thing');
      if (params.id === 't500') throw new Error('connection string postgres://secret@db leaked?');
      return { status: 200, body: { thing: { id: params.id, name: 'x' } } };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/things/{id}/cancel',
    tag: 'Things',
    summary: 'Cancel (an action without a body)',
    params: z.object({ id: z.string() }),
    body: noBody,
    responses: { 200: { description: 'Cancelled', schema: z.object({ cancelled: z.string() }) } },
    handler: async ({ params, body }) => ({
      status: 200,
      body: { cancelled: `${params.id}${body === undefined ? '' : '?'}` },
    }),
  }),
];

describe('route layer: requests in, documented answers out', () => {
  let s: Served;
  beforeAll(async () => {
    s = await serve(routes, {
      keys: { default: testKey({ scopes: new Set(['companies:read', 'companies:write']) }), reader: testKey() },
    });
  });
  afterAll(() => s.close());

  const post = (
    path: string,
    body: string | undefined,
    headers: Record<string, string> = { 'content-type': 'application/json' },
  ) => fetch(`${s.url}${path}`, { method: 'POST', headers, ...(body !== undefined && { body }) }).then(json);

  it('answers a valid request from the handler, with parsed and defaulted input', async () => {
    expect(await fetch(`${s.url}/things`).then(json)).toMatchObject({ status: 200, body: { limit: 5 } });
    expect(await post('/things', '{"name":"lamp"}')).toMatchObject({
      status: 201,
      body: { thing: { id: 't1', name: 'lamp' } },
    });
  });

  it.each([
    ['a path parameter', () => fetch(`${s.url}/things/nope`).then(json), 'path.id'],
    ['a query parameter', () => fetch(`${s.url}/things?limit=11`).then(json), 'query.limit'],
    ['a body field', () => post('/things', '{"name":""}'), 'body.name'],
    ['an unknown body field', () => post('/things', '{"name":"a","colour":"red"}'), 'body'],
    ['a missing body', () => post('/things', undefined), 'body.name'],
  ])('refuses %s with 400 validation_error naming it in details', async (_what, send, path) => {
    const res = await send();
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: expect.stringContaining('invalid'),
      reasonCode: 'validation_error',
      details: [expect.objectContaining({ path })],
    });
  });

  it('refuses malformed JSON with 400, a body that is not JSON with 415, a body over the limit with 413', async () => {
    expect(await post('/things', '{"name": ')).toMatchObject({ status: 400, body: { reasonCode: 'validation_error' } });
    expect(await post('/things', 'name=lamp', { 'content-type': 'application/x-www-form-urlencoded' })).toMatchObject({
      status: 415,
      body: { reasonCode: 'unsupported_media_type' },
    });
    expect(await post('/things', JSON.stringify({ name: 'x'.repeat(2_000) }))).toMatchObject({
      status: 413,
      body: { reasonCode: 'payload_too_large' },
    });
  });

  it('answers 405 with Allow for a method the path does not have', async () => {
    const one = await fetch(`${s.url}/things/t1`, { method: 'DELETE' }).then(json);
    expect(one).toMatchObject({ status: 405, body: { reasonCode: 'method_not_allowed' } });
    expect(one.headers.get('allow')).toBe('GET, HEAD');
    const two = await fetch(`${s.url}/things`, { method: 'PUT' }).then(json);
    expect(two.headers.get('allow')).toBe('GET, POST, HEAD');
  });

  it('answers 403 forbidden naming exactly the missing scope, before looking at the body', async () => {
    const res = await post('/things', '{not json', { 'content-type': 'application/json', 'x-test-key': 'reader' });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ error: expect.any(String), reasonCode: 'forbidden', missing: ['companies:write'] });
  });

  it('maps domain errors to their status and hides unexpected ones behind a bare 500', async () => {
    expect(await fetch(`${s.url}/things/t404`).then(json)).toMatchObject({
      status: 404,
      body: { reasonCode: 'not_found', error: 'thing not found' },
    });
    const res = await fetch(`${s.url}/things/t500`).then(json);
    expect(res).toEqual(
      expect.objectContaining({ status: 500, body: { error: 'internal error', reasonCode: 'internal_error' } }),
    );
    expect(s.logs.some((l) => l.level === 'error' && l.msg === 'unhandled error')).toBe(true);
  });

  describe('an action without a body (POST …/cancel)', () => {
    it('accepts no body and no Content-Type, and an empty JSON object', async () => {
      expect(await post('/things/t1/cancel', undefined, {})).toMatchObject({ status: 200, body: { cancelled: 't1' } });
      expect(await post('/things/t1/cancel', '', {})).toMatchObject({ status: 200, body: { cancelled: 't1' } });
      expect(await post('/things/t1/cancel', ' {} ')).toMatchObject({ status: 200, body: { cancelled: 't1' } });
      const emptyChunked = await fetch(`${s.url}/things/t1/cancel`, {
        method: 'POST',
        body: new ReadableStream({ start: (c) => c.close() }),
        duplex: 'half',
      }).then(json);
      expect(emptyChunked).toMatchObject({ status: 200, body: { cancelled: 't1' } });
    });

    it('refuses a body with content clearly: 400 for JSON, 415 for anything else', async () => {
      const withJson = await post('/things/t1/cancel', '{"reason":"x"}');
      expect(withJson).toMatchObject({
        status: 400,
        body: { reasonCode: 'validation_error', details: [{ path: 'body', message: 'must be empty or {}' }] },
      });
      expect(withJson.body.error).toMatch(/takes no request body/);
      const text = await post('/things/t1/cancel', 'please', { 'content-type': 'text/plain' });
      expect(text).toMatchObject({ status: 415, body: { reasonCode: 'unsupported_media_type' } });
      // Bytes without a Content-Type are read as JSON: not JSON, so 400.
      const untyped = await fetch(`${s.url}/things/t1/cancel`, {
        method: 'POST',
        body: new TextEncoder().encode('please'),
      }).then(json);
      expect(untyped).toMatchObject({ status: 400, body: { reasonCode: 'validation_error' } });
    });
  });

  it('refuses to mount a POST that declares no body', () => {
    const route = defineRoute({
      method: 'post',
      path: '/x',
      tag: 'X',
      summary: 'x',
      responses: { 200: { description: 'ok' } },
      handler: async () => ({ status: 200 }),
    });
    expect(() =>
      mountRoutes(
        express.Router(),
        { kind: 'tenant', prefix: '', registry: undefined as never, bodyLimitBytes: 1, log: undefined as never },
        [route],
      ),
    ).toThrow(/POST \/x must declare its body/);
  });
});

describe('route layer: rate limit in the order of checks', () => {
  it('counts after the scope check and before the body is read, with RateLimit headers', async () => {
    const limiter = new FixedWindowLimiter(2);
    const s = await serve(routes, {
      rateLimit: limiter,
      keys: {
        default: testKey({ keyId: 'limited', scopes: new Set(['companies:write']) }),
        reader: testKey({ keyId: 'r' }),
      },
    });
    try {
      // Refused for scope: not counted.
      expect(
        (await fetch(`${s.url}/things`, { method: 'POST', headers: { 'x-test-key': 'reader' }, body: '{}' })).status,
      ).toBe(403);
      const bad = await fetch(`${s.url}/things`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"name": ',
      }).then(json);
      expect(bad.status).toBe(400);
      expect(bad.headers.get('ratelimit-remaining')).toBe('1');
      expect(
        (
          await fetch(`${s.url}/things`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: '{"name":"a"}',
          })
        ).status,
      ).toBe(201);
      // Over the limit: 429 even with a body that would be refused.
      const limited = await fetch(`${s.url}/things`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"name": ',
      }).then(json);
      expect(limited).toMatchObject({ status: 429, body: { reasonCode: 'rate_limited' } });
      expect(limited.headers.get('retry-after')).toBe('1');
      expect(limited.headers.get('ratelimit-limit')).toBe('2');
    } finally {
      limiter.close();
      await s.close();
    }
  });
});

describe('route layer: answers checked against their documentation (RESPONSE_SCHEMA_CHECK)', () => {
  const answering = (name: string, status: number, body: unknown) =>
    defineRoute({
      method: 'get',
      path: `/answer/${name}`,
      tag: 'Check',
      summary: 'Answers what it is told',
      responses: {
        200: { description: 'A thing', schema: z.object({ thing: Thing }) },
        204: { description: 'Nothing' },
      },
      handler: async () => ({ status, body }),
    });
  const good = answering('good', 200, { thing: { id: 't1', name: 'n' } });
  const wrongType = answering('wrongType', 200, { thing: { id: 1, name: 'n' } });
  const extraField = answering('extraField', 200, { thing: { id: 't1', name: 'n', secret: 's3cr3t' } });
  const undocumented = answering('undocumented', 201, { thing: { id: 't1', name: 'n' } });
  const bodyOn204 = answering('bodyOn204', 204, { note: 'x' });
  const badError = answering('badError', 404, { message: 'not the error shape' });
  const all = [good, wrongType, extraField, undocumented, bodyOn204, badError];

  let on: Served;
  let off: Served;
  beforeAll(async () => {
    on = await serve(all, { checkResponses: true });
    off = await serve(all, { checkResponses: false });
  });
  afterAll(async () => {
    await on.close();
    await off.close();
  });

  it('lets a matching answer through', async () => {
    expect(await fetch(`${on.url}${good.path}`).then(json)).toMatchObject({
      status: 200,
      body: { thing: { id: 't1' } },
    });
  });

  it.each([
    ['a field of the wrong type', wrongType, /body\.thing\.id/],
    ['an undocumented field', extraField, /undocumented field body\.thing\.secret/],
    ['an undocumented status', undocumented, /status 201 is not documented/],
    ['a body where none is documented', bodyOn204, /documented without a body/],
    ['an error answer not of the error shape', badError, /body\.error/],
  ])('turns %s into a loud 500 and logs it', async (_what, route, problem) => {
    const res = await fetch(`${on.url}${route.path}`).then(json);
    expect(res.status).toBe(500);
    expect(res.body).toMatchObject({ reasonCode: 'internal_error', error: expect.stringMatching(problem) });
    expect(on.logs).toContainEqual(
      expect.objectContaining({ level: 'error', msg: 'answer does not match the documented response' }),
    );
  });

  it('is off in production: the handler answer goes out unchecked', async () => {
    expect(await fetch(`${off.url}${extraField.path}`).then(json)).toMatchObject({
      status: 200,
      body: { thing: { secret: 's3cr3t' } },
    });
  });
});

describe('a deprecated route (declared once, in its definition)', () => {
  const old = defineRoute({
    method: 'get',
    path: '/old-things',
    tag: 'Things',
    summary: 'List, the old way',
    deprecated: { since: '2026-12-01', sunset: '2027-03-01', use: '`GET /things`' },
    responses: { 200: { description: 'Page', schema: z.object({ n: z.number() }) } },
    handler: async () => ({ status: 200, body: { n: 1 } }),
  });
  let s: Served;
  beforeAll(async () => {
    s = await serve([old, routes[0]!], { checkResponses: true });
  });
  afterAll(() => s.close());

  it('answers with Deprecation (RFC 9745), Sunset (RFC 8594) and a link to the changelog; other routes do not', async () => {
    const res = await fetch(`${s.url}/old-things`);
    expect(res.status).toBe(200);
    expect({
      deprecation: res.headers.get('deprecation'),
      sunset: res.headers.get('sunset'),
      link: res.headers.get('link'),
    }).toEqual({
      deprecation: `@${Date.parse('2026-12-01T00:00:00Z') / 1000}`,
      sunset: 'Mon, 01 Mar 2027 00:00:00 GMT',
      link: '</docs/changelog>; rel="deprecation"; type="text/markdown"',
    });
    // Refusals of the deprecated route carry them too: a client learns of the sunset whatever it sent.
    expect((await fetch(`${s.url}/old-things?x=1`)).headers.get('sunset')).toBe('Mon, 01 Mar 2027 00:00:00 GMT');
    expect((await fetch(`${s.url}/things`)).headers.get('deprecation')).toBeNull();
  });

  it('is marked deprecated with x-sunset in the document, its headers documented', () => {
    const op = s.document().paths['/api/v1/old-things'].get;
    expect(op).toMatchObject({
      deprecated: true,
      'x-sunset': '2027-03-01',
      description: expect.stringMatching(/Deprecated.*2027-03-01.*GET \/things/s),
    });
    expect(Object.keys(op.responses['200'].headers)).toEqual(expect.arrayContaining(['Deprecation', 'Sunset', 'Link']));
    expect(s.document().paths['/api/v1/things'].get.deprecated).toBeUndefined();
  });

  it('refuses to mount a sunset less than 90 days after the deprecation, or a date that is not one', () => {
    const at = (since: string, sunset: string) => () =>
      mountRoutes(
        express.Router(),
        { kind: 'tenant', prefix: '/x', registry: new OpenAPIRegistry(), bodyLimitBytes: 1, log: console as never },
        [{ ...old, deprecated: { since, sunset, use: 'x' } }],
      );
    expect(at('2026-12-01', '2027-02-28')).toThrow(/less than 90 days after 2026-12-01/);
    expect(at('2026-12-01', 'next spring')).toThrow(/deprecated.sunset must be a date/);
    expect(at('2026-12-01', '2027-03-01')).not.toThrow();
  });
});
