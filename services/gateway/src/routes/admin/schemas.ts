import { SCOPES } from '../../auth/scopes';
import { IdParam } from '../../http/pagination';
import { name, z } from '../../http/zod';

/** The HTTP shapes of the operator API (../shared/guide/operator-api.md). */

export const ScopeList = z
  .array(z.enum(SCOPES))
  .min(1, 'must name at least one scope')
  .openapi({ description: 'Scopes to grant; omitted means the default set' });
export const Mode = z.enum(['live', 'sandbox']);
export const Name = name(100);

export const ApiKey = z
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
export const IssuedKey = z.object({
  apiKey: ApiKey,
  key: z.string().openapi({ description: 'Plaintext key, shown this once' }),
});
export const KeyRequest = z
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
export const Tenant = z.object({ id: z.string(), name: z.string(), createdAt: z.iso.datetime() }).openapi('Tenant');
export const KillSwitch = z.object({ enabled: z.boolean() }).openapi('KillSwitch');
export const TenantParam = z.object({ tenantId: IdParam.shape.id });
export const RequestParam = z.object({ requestId: IdParam.shape.id });
export const KeyParam = z.object({ keyId: IdParam.shape.id });
