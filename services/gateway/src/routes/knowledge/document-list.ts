// The knowledge document list route: `GET /knowledge-bases/documents`.
import type { ServiceClients } from '../../clients';
import { PageQuery, Pagination, pagination } from '../../http/pagination';
import { defineRoute } from '../../http/route';
import { z } from '../../http/zod';
import { documentJson } from './mappers';
import { Document } from './schemas';

/** A page of the tenant’s knowledge documents (metadata only). */
export function documentListRoutes(clients: ServiceClients) {
  const tag = 'Knowledge';
  return [
    defineRoute({
      method: 'get',
      path: '/knowledge-bases/documents',
      tag,
      summary: 'List knowledge documents',
      operationId: 'listKnowledgeDocuments',
      scopes: ['knowledge:read'],
      query: PageQuery,
      responses: {
        200: {
          description: 'A page of documents, newest first (metadata only)',
          schema: z.object({ documents: z.array(Document), pagination: Pagination }),
        },
      },
      handler: async ({ query }, { call }) => {
        const res = await clients.knowledge.listDocuments({ page: { page: query.page, limit: query.limit } }, call);
        return {
          status: 200,
          body: {
            documents: res.documents.map(documentJson),
            pagination: pagination(query, res.page),
          },
        };
      },
    }),
  ];
}
