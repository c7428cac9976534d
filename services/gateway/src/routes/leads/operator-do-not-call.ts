// The operator's do-not-call routes: `POST /do-not-call` (the platform's list) and `POST /tenants/{tenantId}/do-not-call`.
import type { ServiceClients } from '../../clients';
import { withBodyFields } from '../../http/errors';
import { defineRoute } from '../../http/route';
import { z } from '../../http/zod';
import type { OperatorUseCases } from '../../operator/operator';
import { TenantParam } from '../admin/schemas';
import { dncJson } from './mappers';
import { operatorTenantCall, TENANT_404 } from './operator-shared';
import { DoNotCallEntry, PhoneBody } from './schemas';

const DnCAnswer = z.object({
  entry: DoNotCallEntry,
  created: z.boolean().openapi({ description: 'False when the number was on the list already' }),
});

/** Adding numbers to the platform’s and a tenant’s do-not-call lists. */
export function doNotCallOperatorRoutes(clients: ServiceClients, op: OperatorUseCases) {
  const tenantCall = operatorTenantCall(op);
  return [
    defineRoute({
      method: 'post',
      path: '/do-not-call',
      tag: 'Do not call',
      summary: 'Add a number to the platform’s do-not-call list',
      description:
        'Applies to every tenant, at ingest and at every dial. Adding a listed number again answers its entry.',
      operationId: 'addPlatformDoNotCall',
      body: PhoneBody,
      responses: { 201: { description: 'On the list', schema: DnCAnswer } },
      handler: async ({ body }, { requestId }) => {
        // The platform list belongs to no tenant: the call carries none.
        const res = await withBodyFields(clients.leads.addPlatformDoNotCall({ phone: body.phone }, { requestId }));
        return { status: 201, body: { entry: dncJson(res.entry), created: res.created } };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/tenants/{tenantId}/do-not-call',
      tag: 'Do not call',
      summary: 'Add a number to a tenant’s do-not-call list',
      operationId: 'addTenantDoNotCall',
      params: TenantParam,
      body: PhoneBody,
      responses: { 201: { description: 'On the list', schema: DnCAnswer } },
      errors: TENANT_404,
      handler: async ({ params, body }, { requestId }) => {
        const res = await withBodyFields(
          clients.leads.addTenantDoNotCall({ phone: body.phone }, await tenantCall(params.tenantId, requestId)),
        );
        return { status: 201, body: { entry: dncJson(res.entry), created: res.created } };
      },
    }),
  ];
}
