// The operator's message record route: `GET /tenants/{tenantId}/messages`.
import type { ServiceClients } from '../../clients';
import { defineRoute } from '../../http/route';
import { z } from '../../http/zod';
import type { OperatorUseCases } from '../../operator/operator';
import { TenantParam } from '../admin/schemas';
import { messageJson } from './mappers';
import { operatorTenantCall, TENANT_404 } from './operator-shared';
import { Message, MessagesQuery } from './schemas';

/** The rendered WhatsApp and email messages the message adapter sent for a tenant. */
export function messageOperatorRoutes(clients: ServiceClients, op: OperatorUseCases) {
  const tenantCall = operatorTenantCall(op);
  return [
    defineRoute({
      method: 'get',
      path: '/tenants/{tenantId}/messages',
      tag: 'Omni templates',
      summary: 'What the message adapter sent',
      description:
        'The rendered WhatsApp and email messages, newest first (at most 100). With the default adapter nothing is sent live: this is the record.',
      operationId: 'listTenantMessages',
      params: TenantParam,
      query: MessagesQuery,
      responses: { 200: { description: 'Messages, newest first', schema: z.object({ messages: z.array(Message) }) } },
      errors: TENANT_404,
      handler: async ({ params, query }, { requestId }) => {
        const res = await clients.leads.listMessages(
          { channel: query.channel ?? '', limit: 100 },
          await tenantCall(params.tenantId, requestId),
        );
        return { status: 200, body: { messages: res.messages.map(messageJson) } };
      },
    }),
  ];
}
