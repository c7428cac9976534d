import type { IssuedKey } from '../../operator/operator';
import type { ApiKeyRecord } from '../../store/api-keys';
import type { KeyRequestRecord } from '../../store/key-requests';
import type { TenantRecord } from '../../store/tenants';

/** Domain records of the operator use cases → the JSON shapes of schemas.ts. */
export const apiKeyJson = (k: ApiKeyRecord) => ({
  id: k._id.toString(),
  tenantId: k.tenantId,
  name: k.name,
  mode: k.mode,
  scopes: k.scopes,
  status: k.status,
  keyHint: k.keyHint,
  purpose: k.purpose ?? null,
  rateLimitPerSecond: k.rateLimitPerSecond ?? null,
  createdAt: k.createdAt.toISOString(),
  lastUsedAt: k.lastUsedAt?.toISOString() ?? null,
});

export const keyRequestJson = (r: KeyRequestRecord) => ({
  id: r._id.toString(),
  tenantId: r.tenantId,
  name: r.name,
  mode: r.mode,
  purpose: r.purpose,
  scopes: r.scopes,
  status: r.status,
  reason: r.reason ?? null,
  apiKeyId: r.apiKeyId ?? null,
  createdAt: r.createdAt.toISOString(),
});

export const tenantJson = (t: TenantRecord) => ({
  id: t._id.toString(),
  name: t.name,
  createdAt: t.createdAt.toISOString(),
});

export const issuedKeyJson = (issued: IssuedKey) => ({ apiKey: apiKeyJson(issued.apiKey), key: issued.key });
