// Helpers of the operator's outbound route groups (campaigns, omni templates, do-not-call, messages):
// the tenant an operator acts for, and its 404.
import type { OperatorUseCases } from '../../operator/operator';

export const TENANT_404 = { 404: 'No such tenant (`not_found`)' };

/** The call context of an operator acting for a tenant, once the tenant is known to exist. */
export function operatorTenantCall(op: OperatorUseCases) {
  // Operators act live for the tenant (the services refuse a call without a key mode).
  return async (tenantId: string, requestId: string) => {
    await op.assertTenant(tenantId);
    return { requestId, tenantId, keyMode: 'live' as const };
  };
}
