import { validationError } from '@voiceapi/kit/errors';
import { registerService, requireTenant, type ServiceRegistration, pageAsked } from '@voiceapi/kit/grpc';
import { type Logger } from '@voiceapi/kit/service';
import { voiceapi } from '@voiceapi/proto';
import type { KnowledgeDocument } from '../domain/document';
import type { Documents, UploadHeader } from '../usecases/documents';

type UploadPart = voiceapi.knowledge.v1.UploadDocumentRequest;

/** gRPC adapter: maps messages to use-case calls and domain objects back, nothing more. */
export function knowledgeService(uc: Documents, log: Logger): ServiceRegistration {
  return registerService(
    'voiceapi.knowledge.v1.KnowledgeService',
    voiceapi.knowledge.v1.KnowledgeServiceService,
    {
      uploadDocument: async (parts, ctx) => {
        const { header, chunks } = await splitUpload(parts);
        return { document: toProto(await uc.upload(requireTenant(ctx), header, chunks)) };
      },
      listDocuments: async (req, ctx) => {
        const res = await uc.list(requireTenant(ctx), pageAsked(req.page));
        return {
          documents: res.items.map(toProto),
          page: { page: res.page, limit: res.limit, total: res.total, hasMore: res.hasMore },
        };
      },
      getDocument: async (req, ctx) => ({ document: toProto(await uc.get(requireTenant(ctx), req.fileId)) }),
      deleteDocument: async (req, ctx) => {
        await uc.delete(requireTenant(ctx), req.fileId);
        return {};
      },
      getUploadBillingInfo: async (_req, ctx) => {
        const info = await uc.billingInfo(requireTenant(ctx));
        return { ...info, allowedContentTypes: [...info.allowedContentTypes] };
      },
      resolveDocuments: async (req, ctx) => {
        const res = await uc.resolve(requireTenant(ctx), req.fileIds);
        return { documents: res.documents.map(toProto), missing: res.missing };
      },
      getDocumentText: async (req, ctx) => uc.text(requireTenant(ctx), req.fileId, req.maxChars),
    },
    log,
  );
}

/**
 * The header (first message), then the bytes of every following chunk, as they arrive, then the
 * trailer: without it the upload was cut off (a cancelled stream ends like a finished one) and is
 * refused. A title in the trailer (sent after the file) is set on `header` once the chunks were read.
 */
async function splitUpload(
  parts: AsyncIterable<UploadPart>,
): Promise<{ header: UploadHeader; chunks: AsyncIterable<Buffer> }> {
  const it = parts[Symbol.asyncIterator]();
  const first = await it.next();
  const h = first.done ? undefined : first.value.part?.$case === 'header' ? first.value.part.header : undefined;
  if (!h) throw validationError('an upload starts with its header', [{ path: 'header', message: 'required first' }]);
  const header: UploadHeader = {
    fileName: h.fileName,
    contentType: h.contentType,
    ...(h.title !== undefined && { title: h.title }),
  };
  async function* chunks(): AsyncIterable<Buffer> {
    let trailed = false;
    for (let next = await it.next(); !next.done; next = await it.next()) {
      if (trailed) throw validationError('nothing follows the trailer', [{ path: 'trailer', message: 'must be last' }]);
      const part = next.value.part;
      if (part?.$case === 'trailer' && !trailed) {
        trailed = true;
        if (part.trailer.title !== undefined) {
          if (header.title !== undefined)
            throw validationError('title is given twice', [{ path: 'title', message: 'given more than once' }]);
          header.title = part.trailer.title;
        }
        continue;
      }
      if (part?.$case !== 'chunk')
        throw validationError('only chunks, then the trailer, follow the header', [
          { path: 'chunk', message: 'expected' },
        ]);
      yield Buffer.from(part.chunk);
    }
    if (!trailed)
      throw validationError('the upload was cut off before its end', [{ path: 'trailer', message: 'required last' }]);
  }
  return { header, chunks: chunks() };
}

export function toProto(d: KnowledgeDocument): voiceapi.knowledge.v1.Document {
  return {
    fileId: d.fileId,
    fileName: d.fileName,
    title: d.title,
    knowledgebaseId: d.knowledgebaseId,
    wordCount: d.wordCount,
    sizeBytes: d.sizeBytes,
    contentType: d.contentType,
    creditsCharged: d.creditsCharged,
    createTime: d.createdAt,
    sandbox: d.sandbox,
  };
}
