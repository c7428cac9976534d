import { Metadata } from '@grpc/grpc-js';
import { randomBytes } from 'node:crypto';
import { commonReasons } from './errors';

export type KeyMode = 'live' | 'sandbox';

/** Who is calling, carried in gRPC metadata from the gateway to every service. */
export interface CallContext {
  tenantId?: string;
  keyId?: string;
  keyMode?: KeyMode;
  requestId?: string;
  /**
   * Shared by every try of an idempotent call, so a retry finds what a lost try made instead of making it
   * twice. Shaped like a MongoDB ObjectId (24 hex digits), so it can be the created record's id.
   */
  operationId?: string;
}

const KEYS = {
  tenantId: 'tenant-id',
  keyId: 'key-id',
  keyMode: 'key-mode',
  requestId: 'request-id',
  operationId: 'operation-id',
} as const;

/** A new operation id (see `CallContext.operationId`). */
export function newOperationId(): string {
  const seconds = Math.floor(Date.now() / 1000)
    .toString(16)
    .padStart(8, '0');
  return seconds + randomBytes(8).toString('hex');
}

export function contextToMetadata(ctx: CallContext): Metadata {
  const md = new Metadata();
  for (const [field, header] of Object.entries(KEYS) as [keyof CallContext, string][]) {
    const value = ctx[field];
    if (value) md.set(header, value);
  }
  return md;
}

export function contextFromMetadata(md: Metadata): CallContext {
  const read = (header: string): string | undefined => {
    const v = md.get(header)[0];
    return typeof v === 'string' && v.length > 0 ? v : undefined;
  };
  const mode = read(KEYS.keyMode);
  return {
    tenantId: read(KEYS.tenantId),
    keyId: read(KEYS.keyId),
    keyMode: mode === 'live' || mode === 'sandbox' ? mode : undefined,
    requestId: read(KEYS.requestId),
    operationId: ((id) => (id && /^[0-9a-f]{24}$/.test(id) ? id : undefined))(read(KEYS.operationId)),
  };
}

declare const tenantBrand: unique symbol;

/** Proof of a tenant: store methods take one and only `requireTenant` makes one, so an unscoped query won't compile. */
export interface TenantScope {
  readonly tenantId: string;
  readonly mode: KeyMode;
  readonly [tenantBrand]: true;
}

/** A call without a key mode is refused, not taken as live: live spends money and dials real numbers. */
export function requireTenant(ctx: CallContext): TenantScope {
  if (!ctx.tenantId) throw commonReasons.error('unauthorized', 'call carries no tenant');
  if (!ctx.keyMode) throw commonReasons.error('unauthorized', 'call carries no key mode (live or sandbox)');
  return { tenantId: ctx.tenantId, mode: ctx.keyMode } as TenantScope;
}

/** Background work acts for the tenant its record's writer proved. */
export function scopeOfRecord(tenantId: string, mode: KeyMode = 'live'): TenantScope {
  return requireTenant({ tenantId, keyMode: mode });
}

/** The context of a call to another service on the tenant's behalf (the inverse of `requireTenant`). */
export function contextOf(scope: TenantScope): CallContext {
  return { tenantId: scope.tenantId, keyMode: scope.mode };
}
