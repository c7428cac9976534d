import { z } from '../../http/zod';

/** The HTTP shapes of knowledge documents (metadata only: no shape carries a file's bytes). */

/** The largest upload body the gateway reads (the knowledge service's default file limit, plus the form's own bytes). */
export const MAX_UPLOAD_BYTES = 20 * 1024 * 1024 + 64 * 1024;

export const Document = z
  .object({
    fileId: z.string(),
    fileName: z.string(),
    title: z.string(),
    knowledgebaseId: z.string().openapi({ description: 'The tenant’s knowledge base (one per tenant)' }),
    wordCount: z.number().int(),
    sizeBytes: z.number().int(),
    contentType: z.string().openapi({ description: 'The type the bytes were found to be' }),
    creditsCharged: z.number().int().openapi({ description: '0 for sandbox uploads' }),
    sandbox: z.boolean(),
    createdAt: z.string().openapi({ format: 'date-time' }),
  })
  .openapi('KnowledgeDocument');

export const DocumentEnvelope = z.object({ document: Document });

export const UploadFields = z.strictObject({
  title: z
    .string()
    .max(300)
    .optional()
    .openapi({ description: 'Shown instead of the file name; defaults to the file name without its extension' }),
});

export const FileIdParam = z.object({
  fileId: z
    .string()
    .regex(/^[a-fA-F0-9]{24}$/, 'must be a 24-character hex id')
    .openapi({ example: '665f1c2b9d3e4a0012345678' }),
});

export const UploadBillingInfo = z
  .object({
    creditsPerUpload: z.number().int().openapi({ description: 'The least an upload costs (up to 1,000 words)' }),
    creditsPer1000Words: z.number().int().openapi({ description: 'Credits per started 1,000 words of extracted text' }),
    maxFileSizeBytes: z.number().int(),
    allowedContentTypes: z.array(z.string()),
    sandboxFree: z.literal(true).openapi({ description: 'Sandbox uploads are never charged' }),
    balance: z.number().int().openapi({ description: 'The wallet’s balance now' }),
  })
  .openapi('UploadBillingInfo');
