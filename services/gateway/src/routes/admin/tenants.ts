import type { OperatorUseCases } from '../../operator/operator';
import { defineRoute } from '../../http/route';
import { z } from '../../http/zod';
import { tenantJson } from './mappers';
import { Name, Tenant } from './schemas';

/** Tenants: the platform's customers. */
export function tenantRoutes(op: OperatorUseCases) {
  return [
    defineRoute({
      method: 'post',
      path: '/tenants',
      tag: 'Tenants',
      summary: 'Create a tenant',
      body: z.strictObject({ name: Name }),
      responses: { 201: { description: 'Created', schema: z.object({ tenant: Tenant }) } },
      handler: async ({ body }) => ({ status: 201, body: { tenant: tenantJson(await op.createTenant(body.name)) } }),
    }),
  ];
}
