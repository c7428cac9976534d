import { SCOPES } from '../auth/scopes';
import type { OperatorUseCases } from '../operator/operator';
import { IdParam } from '../http/pagination';
import { defineRoute } from '../http/route';
import { z } from '../http/zod';

const ScopeList = z
  .array(z.enum(SCOPES))
  .min(1, 'must name at least one scope')
  .openapi({ description: 'Scopes to grant; omitted means the default set' });
const Mode = z.enum(['live', 'sandbox']);
const Name = z.string().trim().min(1).max(100);

const ApiKey = z
  .object({
    id: z.string(),
    tenantId: z.string(),
    name: z.string(),
    mode: Mode,
    scopes: z.array(z.string()),
    status: z.enum(['pending', 'active', 'inactive']),
    keyHint: z.string().openapi({ description: 'Mode prefix and last four characters' }),
    purpose: z.string().nullable(),
    rateLimitPerSecond: z.number().nullable(),
    createdAt: z.iso.datetime(),
    lastUsedAt: z.iso.datetime().nullable(),
  })
  .openapi('ApiKey');
const IssuedKey = z.object({ apiKey: ApiKey, key: z.string().openapi({ description: 'Plaintext key, shown this once' }) });
const KeyRequest = z
  .object({
    id: z.string(),
    tenantId: z.string(),
    name: z.string(),
    mode: Mode,
    purpose: z.string(),
    scopes: z.array(z.string()),
    status: z.enum(['pending', 'approved', 'rejected']),
    reason: z.string().nullable(),
    apiKeyId: z.string().nullable(),
    createdAt: z.iso.datetime(),
  })
  .openapi('ApiKeyRequest');
const Tenant = z.object({ id: z.string(), name: z.string(), createdAt: z.iso.datetime() }).openapi('Tenant');
const KillSwitch = z.object({ enabled: z.boolean() }).openapi('KillSwitch');
const TenantParam = z.object({ tenantId: IdParam.shape.id });
const RequestParam = z.object({ requestId: IdParam.shape.id });
const KeyParam = z.object({ keyId: IdParam.shape.id });

/** The operator API of ../shared/guide/operator-api.md: tenants, keys and the kill switch. */
export function adminRoutes(op: OperatorUseCases) {
  const notFound = { 404: 'No such resource (`not_found`)' };
  return [
    defineRoute({
      method: 'post',
      path: '/tenants',
      tag: 'Tenants',
      summary: 'Create a tenant',
      body: z.strictObject({ name: Name }),
      responses: { 201: { description: 'Created', schema: z.object({ tenant: Tenant }) } },
      handler: async ({ body }) => ({ status: 201, body: await op.createTenant(body.name) }),
    }),
    defineRoute({
      method: 'post',
      path: '/tenants/{tenantId}/api-keys',
      tag: 'API keys',
      summary: 'Issue a key (request and approval in one step)',
      params: TenantParam,
      body: z.strictObject({
        name: Name,
        mode: Mode,
        scopes: ScopeList.optional(),
        purpose: z.string().max(500).optional(),
        rateLimitPerSecond: z.number().int().min(1).max(100_000).optional(),
      }),
      responses: { 201: { description: 'Issued; `key` is shown this once', schema: IssuedKey } },
      errors: notFound,
      handler: async ({ params, body }) => ({ status: 201, body: await op.issueKey(params.tenantId, body) }),
    }),
    defineRoute({
      method: 'post',
      path: '/tenants/{tenantId}/api-key-requests',
      tag: 'API keys',
      summary: 'File a key request (dashboard "API Access")',
      params: TenantParam,
      body: z.strictObject({ name: Name, mode: Mode, purpose: z.string().trim().min(1).max(500), scopes: ScopeList.optional() }),
      responses: { 201: { description: 'Filed, pending approval', schema: z.object({ request: KeyRequest }) } },
      errors: notFound,
      handler: async ({ params, body }) => ({ status: 201, body: await op.fileKeyRequest(params.tenantId, body) }),
    }),
    defineRoute({
      method: 'get',
      path: '/api-key-requests',
      tag: 'API keys',
      summary: 'List key requests',
      query: z.object({ status: z.enum(['pending', 'approved', 'rejected']).optional() }),
      responses: { 200: { description: 'Requests, oldest first', schema: z.object({ requests: z.array(KeyRequest) }) } },
      handler: async ({ query }) => ({ status: 200, body: await op.listRequests(query.status) }),
    }),
    defineRoute({
      method: 'post',
      path: '/api-key-requests/{requestId}/approve',
      tag: 'API keys',
      summary: 'Approve a key request',
      params: RequestParam,
      body: z.strictObject({ scopes: ScopeList.optional() }),
      responses: { 201: { description: 'Approved; `key` is shown this once', schema: IssuedKey } },
      errors: { ...notFound, 409: 'Already approved or rejected (`conflict`)' },
      handler: async ({ params, body }) => ({ status: 201, body: await op.approve(params.requestId, body.scopes) }),
    }),
    defineRoute({
      method: 'post',
      path: '/api-key-requests/{requestId}/reject',
      tag: 'API keys',
      summary: 'Reject a key request',
      params: RequestParam,
      body: z.strictObject({ reason: z.string().max(500).optional() }),
      responses: { 200: { description: 'Rejected', schema: z.object({ request: KeyRequest }) } },
      errors: { ...notFound, 409: 'Already approved or rejected (`conflict`)' },
      handler: async ({ params, body }) => ({ status: 200, body: await op.reject(params.requestId, body.reason) }),
    }),
    defineRoute({
      method: 'patch',
      path: '/api-keys/{keyId}',
      tag: 'API keys',
      summary: 'Rename, deactivate or reactivate a key',
      description: 'Every gateway replica stops accepting a deactivated key within a second.',
      params: KeyParam,
      body: z
        .strictObject({ status: z.enum(['active', 'inactive']).optional(), name: Name.optional() })
        .refine((b) => b.status !== undefined || b.name !== undefined, 'send status and/or name'),
      responses: { 200: { description: 'Updated', schema: z.object({ apiKey: ApiKey }) } },
      errors: notFound,
      handler: async ({ params, body }) => ({ status: 200, body: await op.updateKey(params.keyId, body) }),
    }),
    defineRoute({
      method: 'get',
      path: '/kill-switch',
      tag: 'Kill switch',
      summary: 'Read the global kill switch',
      responses: { 200: { description: 'Current state', schema: KillSwitch } },
      handler: async () => ({ status: 200, body: op.killSwitch() }),
    }),
    defineRoute({
      method: 'put',
      path: '/kill-switch',
      tag: 'Kill switch',
      summary: 'Turn the tenant API off or on',
      description: 'While enabled, every /api/v1 call answers 503 `api_globally_disabled`; every replica obeys within a second.',
      body: z.strictObject({ enabled: z.boolean() }),
      responses: { 200: { description: 'New state', schema: KillSwitch } },
      handler: async ({ body }) => ({ status: 200, body: await op.setKillSwitch(body.enabled) }),
    }),
  ];
}
