// The knowledge upload routes: `POST /knowledge-bases/documents` (the upload) and
// `GET /knowledge-bases/documents/upload-billing-info` (what an upload costs).
import type { voiceapi } from '@voiceapi/proto';
import type { ServiceClients } from '../../clients';
import { defineRoute, multipart, type FilePart } from '../../http/route';
import { DocumentEnvelope, MAX_UPLOAD_BYTES, UploadBillingInfo, UploadFields } from './schemas';
import { documentJson } from './mappers';

/** An upload may take as long as a slow client needs to send 20 MB, not the default deadline. */
const UPLOAD_DEADLINE_MS = 120_000;

/** Uploading a knowledge document (streamed to the knowledge service), and its pricing and limits. */
export function uploadRoutes(clients: ServiceClients) {
  const tag = 'Knowledge';
  return [
    defineRoute({
      method: 'post',
      path: '/knowledge-bases/documents',
      tag,
      summary: 'Upload a knowledge document',
      operationId: 'uploadKnowledgeDocument',
      description:
        'A `multipart/form-data` body: the `file` and an optional `title`, in either order (txt, md, csv, html, pdf or docx, at most 20 MB). The upload is streamed to the knowledge ' +
        'service, which checks the bytes against the declared type and the file name’s extension (a PDF that is not a PDF, an executable: 415 `unsupported_media_type`), ' +
        'extracts the text (`wordCount`), stores the content and charges 1 credit per started 1,000 words (at least 1) by reference `knowledge:<fileId>` ' +
        '(402 `insufficient_credits`). A sandbox key is never charged. Damaged files and archives that expand too far answer 422 `document_unreadable`; an empty file 400.',
      scopes: ['knowledge:write'],
      body: multipart({
        fields: UploadFields,
        files: { file: { description: 'The document', required: true } },
        maxBytes: MAX_UPLOAD_BYTES,
      }),
      responses: { 201: { description: 'Stored, extracted and charged', schema: DocumentEnvelope } },
      errors: {
        402: 'The wallet cannot cover the upload (`insufficient_credits`)',
        413: 'Larger than the limit (`payload_too_large`)',
        415: 'Not an accepted type, or the bytes are not what the type says (`unsupported_media_type`)',
        422: 'Damaged, or an archive that expands past the limits (`document_unreadable`)',
      },
      handler: async ({ body }, { call }) => {
        const res = await clients.knowledge.uploadDocument(
          uploadMessages(body.fields.title, body.files, body.fieldsAfterFiles),
          call,
          { timeoutMs: UPLOAD_DEADLINE_MS },
        );
        return { status: 201, body: { document: documentJson(res.document) } };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/knowledge-bases/documents/upload-billing-info',
      tag,
      summary: 'What an upload costs, the limits, and the balance',
      operationId: 'getKnowledgeUploadBillingInfo',
      scopes: ['knowledge:read'],
      responses: { 200: { description: 'Upload pricing and limits', schema: UploadBillingInfo } },
      handler: async (_input, { call }) => {
        const r = await clients.knowledge.getUploadBillingInfo({}, call);
        return {
          status: 200,
          body: {
            creditsPerUpload: r.creditsPerUpload,
            creditsPer1000Words: r.creditsPer1000Words,
            maxFileSizeBytes: r.maxFileSizeBytes,
            allowedContentTypes: r.allowedContentTypes,
            sandboxFree: true as const,
            balance: r.balance,
          },
        };
      },
    }),
  ];
}

/**
 * The upload as the service's client stream: the header, the file's chunks as they arrive, then the
 * trailer that says the file is whole (with a title sent after the file). A body that goes bad
 * throws before the trailer, so the service never takes a cut-off file for a whole one.
 */
async function* uploadMessages(
  title: string | undefined,
  files: AsyncIterable<FilePart>,
  fieldsAfterFiles: () => Promise<{ title?: string | undefined }>,
): AsyncIterable<voiceapi.knowledge.v1.UploadDocumentRequest> {
  for await (const file of files) {
    yield {
      part: {
        $case: 'header',
        header: { fileName: file.filename, contentType: file.contentType, ...(title !== undefined && { title }) },
      },
    };
    for await (const chunk of file.stream) yield { part: { $case: 'chunk', chunk: chunk as Buffer } };
    break; // one file per upload (the form allows one)
  }
  const late = await fieldsAfterFiles();
  yield { part: { $case: 'trailer', trailer: { ...(late.title !== undefined && { title: late.title }) } } };
}
