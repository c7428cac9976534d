// The omni template route of the tenant API: `GET /omni/templates` (WhatsApp and email templates a lead can name).
import type { ServiceClients } from '../../clients';
import { defineRoute } from '../../http/route';
import { z } from '../../http/zod';
import { templateJson } from './mappers';
import { Template, TemplatesQuery } from './schemas';

/** The tenant’s WhatsApp and email templates, read-only (operators create them). */
export function omniTemplateRoutes(clients: ServiceClients) {
  const tag = 'Leads';
  return [
    defineRoute({
      method: 'get',
      path: '/omni/templates',
      tag,
      summary: 'List WhatsApp and email templates',
      description:
        'Name one with `whatsappTemplateId` / `emailTemplateId` in a lead, with values for its `variables` in `whatsappParams` / `templateVariables`.',
      operationId: 'listOmniTemplates',
      scopes: ['leads:read'],
      query: TemplatesQuery,
      responses: {
        200: {
          description: 'The tenant’s templates, newest first',
          schema: z.object({ templates: z.array(Template) }),
        },
      },
      handler: async ({ query }, { call }) => ({
        status: 200,
        body: {
          templates: (await clients.leads.listTemplates({ channel: query.channel ?? '' }, call)).templates.map(
            templateJson,
          ),
        },
      }),
    }),
  ];
}
