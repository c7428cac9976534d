import { nullIfNotFound } from '@voiceapi/kit/errors';
import { contextOf, type PromiseClient } from '@voiceapi/kit/grpc';
import type { voiceapi } from '@voiceapi/proto';
import type { Knowledge } from '../usecases/ports';

type KnowledgeClient = Pick<
  PromiseClient<typeof voiceapi.knowledge.v1.KnowledgeServiceService>,
  'resolveDocuments' | 'getDocumentText'
>;

/** The tenant's knowledge documents and their text, over knowledge's gRPC API. */
export function knowledgeDocuments(knowledge: KnowledgeClient): Knowledge {
  return {
    async resolve(scope, fileIds) {
      const r = await knowledge.resolveDocuments({ fileIds: [...fileIds] }, contextOf(scope));
      return {
        documents: r.documents.map((d) => ({
          fileId: d.fileId,
          fileName: d.fileName,
          title: d.title,
          knowledgebaseId: d.knowledgebaseId,
          wordCount: d.wordCount,
        })),
        missing: r.missing,
      };
    },
    text: async (scope, fileId, maxChars) =>
      (await nullIfNotFound(knowledge.getDocumentText({ fileId, maxChars }, contextOf(scope))))?.text ?? null,
  };
}
