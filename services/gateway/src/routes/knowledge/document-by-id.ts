// The routes of one knowledge document: `GET` and `DELETE /knowledge-bases/documents/{fileId}`.
import type { ServiceClients } from '../../clients';
import { defineRoute } from '../../http/route';
import { documentJson } from './mappers';
import { DocumentEnvelope, FileIdParam } from './schemas';

/** Reading a knowledge document’s metadata, and deleting the document. */
export function documentByIdRoutes(clients: ServiceClients) {
  const tag = 'Knowledge';
  const notFound = { 404: 'No such document for this tenant (`not_found`)' };
  return [
    defineRoute({
      method: 'get',
      path: '/knowledge-bases/documents/{fileId}',
      tag,
      summary: 'Get a knowledge document’s metadata',
      operationId: 'getKnowledgeDocument',
      scopes: ['knowledge:read'],
      params: FileIdParam,
      responses: {
        200: { description: 'The document (metadata only; no endpoint returns the bytes)', schema: DocumentEnvelope },
      },
      errors: notFound,
      handler: async ({ params }, { call }) => ({
        status: 200,
        body: {
          document: documentJson((await clients.knowledge.getDocument({ fileId: params.fileId }, call)).document),
        },
      }),
    }),
    defineRoute({
      method: 'delete',
      path: '/knowledge-bases/documents/{fileId}',
      tag,
      summary: 'Delete a knowledge document',
      description:
        'Its content and text are erased. The upload’s charge stays. Agents that linked it keep its title in `selectedKnowledgebases`.',
      operationId: 'deleteKnowledgeDocument',
      scopes: ['knowledge:write'],
      params: FileIdParam,
      responses: { 204: { description: 'Deleted' } },
      errors: notFound,
      handler: async ({ params }, { call }) => {
        await clients.knowledge.deleteDocument({ fileId: params.fileId }, call);
        return { status: 204 };
      },
    }),
  ];
}
