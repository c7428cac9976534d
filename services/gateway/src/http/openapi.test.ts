// Over 300 lines because the cases of one module share its fixtures.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Logger } from '@voiceapi/kit/service';
import express from 'express';
import type { ServiceClients } from '../clients';
import type { CallStreams } from '../routes/telephony/call-stream';
import type { OperatorUseCases } from '../operator/operator';
import { adminAreas, routesOf, signedAreas, tagsOf, tenantAreas, type Area } from '../routes';
import { registerWebhookPayloads } from '../routes/webhooks';
import { mountRoutes } from './mount';
import { adminRegistry, buildDocument, tenantRegistry } from './openapi';
import { defineRoute, operationIdOf } from './route';
import { z } from './zod';

// The published documents, built from the real route definitions exactly as app.ts builds them.

const log = {
  error: () => undefined,
  warn: () => undefined,
  info: () => undefined,
  debug: () => undefined,
} as unknown as Logger;
const deps = { clients: {} as ServiceClients, operator: {} as OperatorUseCases, streams: {} as CallStreams };

function documentOf(kind: 'tenant' | 'admin'): Record<string, any> {
  const registry = kind === 'tenant' ? tenantRegistry() : adminRegistry();
  // The webhook payloads are in the tenant document, as app.ts registers them.
  if (kind === 'tenant') registerWebhookPayloads(registry);
  const areas: Area[] = kind === 'tenant' ? tenantAreas : adminAreas;
  mountRoutes(
    express.Router(),
    { kind, prefix: kind === 'tenant' ? '/api/v1' : '/admin/v1', registry, bodyLimitBytes: 1024, log },
    routesOf(areas, deps),
  );
  // The signed routes (recordings) are in the tenant document, as app.ts mounts them.
  if (kind === 'tenant')
    mountRoutes(
      express.Router(),
      { kind: 'signed', prefix: '/api/v1', registry, bodyLimitBytes: 1024, log },
      routesOf(signedAreas, deps),
    );
  return buildDocument(registry, { title: kind, version: '1.0.0', description: kind }, tagsOf(areas)) as Record<
    string,
    any
  >;
}

const operations = (doc: Record<string, any>) =>
  Object.entries(doc.paths as Record<string, Record<string, any>>).flatMap(([p, item]) =>
    ['get', 'put', 'post', 'patch', 'delete']
      .filter((m) => item[m])
      .map((m) => ({ name: `${m.toUpperCase()} ${p}`, method: m, op: item[m] })),
  );

describe('the OpenAPI documents say what the server enforces', () => {
  const tenant = documentOf('tenant');
  const admin = documentOf('admin');
  const company = tenant.components.schemas.CompanyCreate.properties;

  it('describes timezone, website, trimmed names, the businessHours bound and refused control characters', () => {
    expect(company.timezone).toMatchObject({ description: expect.stringMatching(/IANA/), example: 'America/New_York' });
    const website = new RegExp(company.website.pattern, 'u');
    expect([
      website.test('https://a.example'),
      website.test('HTTP://a.example'),
      website.test('ftp://a.example'),
      website.test('javascript:alert(1)'),
    ]).toEqual([true, true, false, false]);
    expect(company.website.description).toMatch(/http or https/);
    expect(company.name.description).toMatch(/trimmed/);
    const name = new RegExp(company.name.pattern, 'u');
    expect([name.test('  Sunrise Clinic '), name.test('Sun\u0000rise'), name.test('a\tb'), name.test('   ')]).toEqual([
      true,
      false,
      false,
      false,
    ]);
    const description = new RegExp(company.description.pattern, 'u');
    expect([description.test('line one\nline two\ttab'), description.test('bell\u0007')]).toEqual([true, false]);
    expect(company.businessHours).toMatchObject({
      description: expect.stringMatching(/8 KiB \(8192 bytes\)/),
      'x-max-json-bytes': 8192,
    });
    const list = tenant.paths['/api/v1/companies'].get.parameters as {
      name: string;
      description: string;
      schema: { type: string };
    }[];
    for (const p of list.filter((x) => x.name === 'page' || x.name === 'limit')) {
      expect({ name: p.name, type: p.schema.type, plain: /plain decimal digits/.test(p.description) }).toEqual({
        name: p.name,
        type: 'integer',
        plain: true,
      });
    }
  });

  it('documents the credits rules: examples, the type filter, the top-up bounds, newest first', () => {
    const schemas = tenant.components.schemas;
    expect(schemas.CreditBalance.example).toEqual({
      balance: 996,
      available: 976,
      held: 20,
      updatedAt: expect.any(String),
    });
    expect(schemas.CreditBalance.properties.available.description).toMatch(/`balance` − `held`/);
    expect(schemas.CreditTransaction.properties.amount.description).toMatch(
      /debits negative.*Ledger amounts are authoritative/,
    );
    expect(schemas.CreditTransaction.properties.callId.type).toEqual(['string', 'null']);
    const list = tenant.paths['/api/v1/credits/transactions'].get;
    expect(list.description).toMatch(/newest first/);
    expect(list.responses[200].content['application/json'].schema.example.transactions).toHaveLength(2);
    expect(list.responses[403].description).toMatch(/credits:read/);
    const type = (list.parameters as { name: string; schema: { enum: string[] } }[]).find((p) => p.name === 'type');
    expect(type?.schema.enum).toEqual([
      'top_up',
      'call_deduction',
      'number_purchase',
      'knowledge_upload',
      'adjustment',
    ]);
    const topUp = admin.paths['/admin/v1/tenants/{tenantId}/credits'].post;
    expect(admin.components.schemas.CreditTopUp.properties.amount).toMatchObject({
      type: 'integer',
      minimum: 1,
      maximum: 1_000_000_000,
    });
    expect(admin.components.schemas.CreditTopUp.properties.note).toMatchObject({
      maxLength: 500,
      description: expect.stringMatching(/trimmed/),
    });
    expect(topUp.responses[201].content['application/json'].schema.example).toMatchObject({
      balance: 1000,
      transaction: { type: 'top_up' },
    });
    expect(Object.keys(topUp.responses)).toEqual(expect.arrayContaining(['201', '400', '404', '503', '504']));
    expect(Object.keys(topUp.responses[503].headers)).toContain('Retry-After');
  });

  it('has relative servers, described global tags, and a unique operationId on every operation', () => {
    for (const doc of [tenant, admin]) {
      expect(doc.servers).toEqual([expect.objectContaining({ url: '/' })]);
      const tags = new Set(
        (doc.tags as { name: string; description: string }[]).filter((t) => t.description).map((t) => t.name),
      );
      const ops = operations(doc);
      for (const { name, op } of ops) {
        expect({ name, tagged: (op.tags as string[]).every((t) => tags.has(t)), id: typeof op.operationId }).toEqual({
          name,
          tagged: true,
          id: 'string',
        });
      }
      expect(new Set(ops.map((o) => o.op.operationId)).size).toBe(ops.length);
    }
    expect(operations(tenant).map((o) => o.op.operationId)).toEqual([
      'getPing',
      'listCompanies',
      'createCompany',
      'getCompany',
      'updateCompany',
      'deleteCompany',
      'getCredits',
      'listCreditTransactions',
      'listCampaigns',
      'getCampaign',
      'listCampaignContacts',
      'createLead',
      'createLeadBatch',
      'createEvent',
      'listEventRoutes',
      'createEventRoute',
      'deleteEventRoute',
      'listOmniTemplates',
      'getContact',
      'deleteContact',
      'cancelContact',
      'createContactFollowup',
      'listCalls',
      'listActiveCalls',
      'streamCalls',
      'getCallRecordingLink',
      'listContactCalls',
      'getContactCall',
      'getCallAnalytics',
      'listNumbers',
      'listAvailableNumbers',
      'purchaseNumber',
      'listKnowledgeDocuments',
      'uploadKnowledgeDocument',
      'getKnowledgeUploadBillingInfo',
      'getKnowledgeDocument',
      'deleteKnowledgeDocument',
      'listInboundAgents',
      'createInboundAgent',
      'getInboundAgent',
      'updateInboundAgent',
      'activateInboundAgent',
      'generateInboundAgentScript',
      'syncInboundAgentDoctors',
      'lookupInboundAgentCrm',
      'getRecording',
    ]);
    expect(operations(admin).map((o) => o.op.operationId)).toEqual(
      expect.arrayContaining([
        'createTenant',
        'issueApiKey',
        'listApiKeyRequests',
        'approveApiKeyRequest',
        'updateApiKey',
        'getKillSwitch',
        'setKillSwitch',
        'topUpTenantCredits',
        'createTenantCampaign',
        'startTenantCampaign',
        'createTenantOmniTemplate',
        'addPlatformDoNotCall',
        'addTenantDoNotCall',
        'listTenantMessages',
      ]),
    );
  });

  it('derives operationIds from the route, takes an explicit one, and refuses a duplicate', () => {
    const r = (method: 'get' | 'post' | 'put' | 'patch' | 'delete', p: string, operationId?: string) =>
      operationIdOf({ method, path: p, ...(operationId && { operationId }) });
    expect([
      r('get', '/companies'),
      r('post', '/companies'),
      r('delete', '/companies/{id}'),
      r('post', '/contacts/{id}/cancel'),
      r('get', '/contacts/{id}/calls/{callId}'),
      r('put', '/kill-switch'),
      r('get', '/companies', 'companiesPage'),
    ]).toEqual([
      'listCompanies',
      'createCompany',
      'deleteCompany',
      'cancelContact',
      'getContactCall',
      'setKillSwitch',
      'companiesPage',
    ]);
    const route = (p: string, operationId?: string) =>
      defineRoute({
        method: 'get',
        path: p,
        tag: 'T',
        summary: 's',
        ...(operationId && { operationId }),
        responses: { 200: { description: 'ok', schema: z.object({}) } },
        handler: async () => ({ status: 200, body: {} }),
      });
    const mount = (routes: ReturnType<typeof route>[]) =>
      mountRoutes(
        express.Router(),
        { kind: 'tenant', prefix: '/x', registry: tenantRegistry(), bodyLimitBytes: 1, log },
        routes,
      );
    expect(() => mount([route('/things'), route('/things/', 'listThings')])).toThrow(/listThings.*used twice/);
    expect(() => mount([route('/things'), route('/things/', 'allThings')])).not.toThrow();
  });

  it('documents the headers every answer carries, and those of rate limits, retries, replays and challenges', () => {
    const headersOf = (doc: Record<string, any>, p: string, m: string, status: number) =>
      Object.keys(doc.paths[p][m].responses[status].headers ?? {});
    for (const { name, op } of [...operations(tenant), ...operations(admin)]) {
      for (const [status, r] of Object.entries(op.responses as Record<string, { headers?: object }>)) {
        expect({ name, status, headers: Object.keys(r.headers ?? {}) }).toEqual({
          name,
          status,
          headers: expect.arrayContaining(['X-Request-Id', 'Cache-Control']),
        });
      }
    }
    expect(headersOf(tenant, '/api/v1/companies', 'get', 200)).toEqual(
      expect.arrayContaining(['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset']),
    );
    expect(headersOf(tenant, '/api/v1/companies', 'get', 429)).toEqual(
      expect.arrayContaining(['Retry-After', 'RateLimit-Reset']),
    );
    expect(headersOf(tenant, '/api/v1/companies', 'get', 503)).toContain('Retry-After');
    expect(headersOf(tenant, '/api/v1/companies', 'get', 401)).toContain('WWW-Authenticate');
    expect(headersOf(tenant, '/api/v1/companies', 'post', 201)).toContain('Idempotent-Replayed');
    expect(headersOf(tenant, '/api/v1/companies', 'get', 200)).not.toContain('Idempotent-Replayed');
    expect(headersOf(admin, '/admin/v1/kill-switch', 'get', 429)).toContain('Retry-After');
    expect(headersOf(admin, '/admin/v1/kill-switch', 'get', 401)).toContain('WWW-Authenticate');
    // 405: every path names the methods it has and what any other method gets.
    expect(tenant.paths['/api/v1/companies/{id}'].description).toMatch(
      /405 `method_not_allowed` with `Allow: GET, PATCH, DELETE, HEAD`/,
    );
    expect(tenant.info.description).toMatch(/405.*Allow/);
  });

  it('says a replayed Idempotency-Key answers the stored answer even after the resource was deleted', () => {
    const header = (
      tenant.paths['/api/v1/companies'].post.parameters as { name: string; in: string; description: string }[]
    ).find((p) => p.name === 'Idempotency-Key');
    expect(header?.description).toMatch(/even if the resource it names was changed or deleted since/);
  });

  it('resolves every $ref within the document (webhook payloads included), as SDK generators need', () => {
    for (const [name, doc] of Object.entries({ tenant, admin })) {
      const refs = new Set<string>();
      const walk = (v: unknown): void => {
        if (Array.isArray(v)) v.forEach(walk);
        else if (v && typeof v === 'object')
          for (const [k, x] of Object.entries(v))
            if (k === '$ref' && typeof x === 'string') refs.add(x);
            else walk(x);
      };
      walk(doc);
      const missing = [...refs].filter(
        (r) =>
          !r.startsWith('#/') ||
          r
            .slice(2)
            .split('/')
            .reduce<any>((at, part) => at?.[part], doc) === undefined,
      );
      expect({ name, missing }).toEqual({ name, missing: [] });
    }
    expect(Object.keys(tenant.webhooks ?? {})).toHaveLength(5);
  });

  it("passes Redocly's recommended rules without an error (offline)", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'openapi-lint-'));
    try {
      for (const [name, doc] of Object.entries({ tenant, admin })) {
        const file = path.join(dir, `${name}.json`);
        writeFileSync(file, JSON.stringify(doc));
        const report = await redoclyLint(file);
        const errors = report.problems
          .filter((p) => p.severity === 'error')
          .map((p) => `${p.ruleId} ${p.location?.[0]?.pointer ?? ''}: ${p.message}`);
        expect({ name, errors }).toEqual({ name, errors: [] });
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

interface LintReport {
  problems: { severity: string; ruleId: string; message: string; location?: { pointer?: string }[] }[];
}

/** `redocly lint --extends recommended`, with telemetry and the update check off: no network. */
function redoclyLint(file: string): Promise<LintReport> {
  const bin = path.join(__dirname, '../../../../node_modules/.bin/redocly');
  return new Promise((resolve, reject) => {
    execFile(
      bin,
      ['lint', '--extends', 'recommended', '--format', 'json', file],
      {
        env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', CI: 'true' },
        maxBuffer: 16 * 1024 * 1024,
      },
      // Exit code 1 means problems were found: the report on stdout says which.
      (err, stdout, stderr) => {
        try {
          resolve(JSON.parse(stdout) as LintReport);
        } catch {
          reject(new Error(`redocly lint gave no report (${err?.message ?? 'no error'}): ${stderr.slice(-2000)}`));
        }
      },
    );
  });
}
