/** The store: connecting, tenant-owned collections, cross-tenant access, leases, change feeds, caches, counted and declared queries. */
export * from '../mongo/connect';
export * from '../mongo/unavailable';
export * from '../mongo/blob-store';
export * from '../mongo/lease';
export * from '../mongo/change-feed';
export * from '../mongo/read-cache';
export * from '../mongo/store-ops';
export * from '../mongo/query-shapes';
export * from '../mongo/query-check';
export * from '../mongo/tenant-collection';
export type { CrossTenantAccess } from '../mongo/cross-tenant';
export * from '../mongo/tenant-keyed';
