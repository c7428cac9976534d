// The operator's omni template route: `POST /tenants/{tenantId}/omni-templates`.
import type { ServiceClients } from '../../clients';
import { withBodyFields } from '../../http/errors';
import { defineRoute } from '../../http/route';
import { z } from '../../http/zod';
import type { OperatorUseCases } from '../../operator/operator';
import { TenantParam } from '../admin/schemas';
import { templateJson } from './mappers';
import { operatorTenantCall, TENANT_404 } from './operator-shared';
import { Template, TemplateCreate } from './schemas';

/** Creating a tenant’s WhatsApp and email templates. */
export function templateOperatorRoutes(clients: ServiceClients, op: OperatorUseCases) {
  const tenantCall = operatorTenantCall(op);
  return [
    defineRoute({
      method: 'post',
      path: '/tenants/{tenantId}/omni-templates',
      tag: 'Omni templates',
      summary: 'Create a WhatsApp or email template',
      description:
        'Placeholders are read from `body` and `subject`: `{{1}}`, `{{2}}` for WhatsApp, `{{key}}` for email.',
      params: TenantParam,
      body: TemplateCreate,
      responses: { 201: { description: 'Created', schema: z.object({ template: Template }) } },
      errors: TENANT_404,
      handler: async ({ params, body }, { requestId }) => {
        const res = await withBodyFields(
          clients.leads.createTemplate(body, await tenantCall(params.tenantId, requestId)),
        );
        return { status: 201, body: { template: templateJson(res.template ?? missing('template')) } };
      },
    }),
  ];
}

function missing(what: string): never {
  throw new Error(`leads service answered without a ${what}`);
}
