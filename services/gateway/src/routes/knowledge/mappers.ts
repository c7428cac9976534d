import type { voiceapi } from '@voiceapi/proto';
import type { z } from '../../http/zod';
import type { Document } from './schemas';

/** The knowledge service's message → the JSON answer. */
export function documentJson(d: voiceapi.knowledge.v1.Document | undefined): z.infer<typeof Document> {
  if (!d) throw new Error('knowledge service answered without a document');
  return {
    fileId: d.fileId,
    fileName: d.fileName,
    title: d.title,
    knowledgebaseId: d.knowledgebaseId,
    wordCount: d.wordCount,
    sizeBytes: d.sizeBytes,
    contentType: d.contentType,
    creditsCharged: d.creditsCharged,
    sandbox: d.sandbox,
    createdAt: (d.createTime ?? new Date(0)).toISOString(),
  };
}
