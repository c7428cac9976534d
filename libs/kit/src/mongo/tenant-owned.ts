// The shapes a tenant's collection and the cross-tenant and shared-write helpers all speak, in a module of their own
// so none of the three reads another for them.

/** A document owned by one tenant. Its tenant never changes once written. */
export interface TenantOwned {
  _id: unknown;
  tenantId: string;
}

/** How ids of a collection look in URLs and in the store. */
export interface IdCodec<Id> {
  /** The stored id for a public id, or undefined (answered as not found). */
  parse(id: string): Id | undefined;
}
