import type { OperatorUseCases } from '../../operator/operator';
import { defineRoute } from '../../http/route';
import { z } from '../../http/zod';
import { apiKeyJson, issuedKeyJson, keyRequestJson } from './mappers';
import { ScopeList, Mode, Name, ApiKey, IssuedKey, KeyRequest, TenantParam, RequestParam, KeyParam } from './schemas';

/** API keys and key requests: issue, approve, reject, rename, deactivate. */
export function apiKeyRoutes(op: OperatorUseCases) {
  const notFound = { 404: 'No such resource (`not_found`)' };
  return [
    defineRoute({
      method: 'post',
      path: '/tenants/{tenantId}/api-keys',
      tag: 'API keys',
      summary: 'Issue a key (request and approval in one step)',
      operationId: 'issueApiKey',
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
      handler: async ({ params, body }) => ({
        status: 201,
        body: issuedKeyJson(await op.issueKey(params.tenantId, body)),
      }),
    }),
    defineRoute({
      method: 'post',
      path: '/tenants/{tenantId}/api-key-requests',
      tag: 'API keys',
      summary: 'File a key request (dashboard "API Access")',
      operationId: 'fileApiKeyRequest',
      params: TenantParam,
      body: z.strictObject({
        name: Name,
        mode: Mode,
        purpose: z.string().trim().min(1).max(500),
        scopes: ScopeList.optional(),
      }),
      responses: { 201: { description: 'Filed, pending approval', schema: z.object({ request: KeyRequest }) } },
      errors: notFound,
      handler: async ({ params, body }) => ({
        status: 201,
        body: { request: keyRequestJson(await op.fileKeyRequest(params.tenantId, body)) },
      }),
    }),
    defineRoute({
      method: 'get',
      path: '/api-key-requests',
      tag: 'API keys',
      summary: 'List key requests',
      query: z.object({ status: z.enum(['pending', 'approved', 'rejected']).optional() }),
      responses: {
        200: { description: 'Requests, oldest first', schema: z.object({ requests: z.array(KeyRequest) }) },
      },
      handler: async ({ query }) => ({
        status: 200,
        body: { requests: (await op.listRequests(query.status)).map(keyRequestJson) },
      }),
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
      handler: async ({ params, body }) => ({
        status: 201,
        body: issuedKeyJson(await op.approve(params.requestId, body.scopes)),
      }),
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
      handler: async ({ params, body }) => ({
        status: 200,
        body: { request: keyRequestJson(await op.reject(params.requestId, body.reason)) },
      }),
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
      handler: async ({ params, body }) => ({
        status: 200,
        body: { apiKey: apiKeyJson(await op.updateKey(params.keyId, body)) },
      }),
    }),
  ];
}
