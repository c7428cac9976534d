import { createHash } from 'node:crypto';
import { commonReasons, notFound, validationError } from '@voiceapi/kit/errors';
import { type PageAsked, type TenantScope } from '@voiceapi/kit/grpc';
import { type Page } from '@voiceapi/kit/mongo';
import { type Logger } from '@voiceapi/kit/service';
import { ALLOWED_CONTENT_TYPES, declaredKind, extractText, ExtractionRefused } from '../extract';
import { knowledgeReasons } from '../reasons';
import type { DocumentStore } from '../store/document-store';
import type { KnowledgeDocument } from '../domain/document';
import type { Wallet, DocumentEvents } from './ports';

const MAX_FILE_NAME = 255;
const MAX_TITLE = 300;
/** The most documents one resolve call takes (an agent links far fewer; see agents' limit). */
export const MAX_RESOLVE = 100;

export interface UploadHeader {
  fileName: string;
  contentType: string;
  /** Set by a trailer once the chunks were read, when the title came after the file. */
  title?: string;
}

/** 1 credit (at the default rate) per started 1,000 words, at least one unit per upload. */
export const uploadCost = (words: number, ratePerThousand: number): number =>
  Math.max(1, Math.ceil(words / 1000)) * ratePerThousand;

/**
 * Knowledge documents: an upload is checked (name, size, type against its bytes), its text
 * extracted, everything stored as pending, then charged and made visible. The charge's reference
 * is the file id, so recovery can repeat it after a crash without charging twice.
 */
export class Documents {
  constructor(
    private readonly d: {
      store: DocumentStore;
      wallet: Wallet;
      events: DocumentEvents;
      maxFileBytes: number;
      log: Logger;
      now?: () => Date;
    },
  ) {}

  private now(): Date {
    return this.d.now?.() ?? new Date();
  }

  async upload(scope: TenantScope, header: UploadHeader, chunks: AsyncIterable<Buffer>): Promise<KnowledgeDocument> {
    const fileName = checkFileName(header.fileName);
    const kind = refusing(() => declaredKind(fileName, header.contentType));
    const content = await this.collect(chunks);
    // Read after the chunks: a title sent after the file arrives with the last of them.
    const title = header.title?.trim() || fileName.replace(/\.[^.]*$/, '');
    if (title.length > MAX_TITLE)
      throw validationError('title is too long', [{ path: 'title', message: `at most ${MAX_TITLE} characters` }]);
    const extracted = await refusingAsync(() => extractText(content, kind));

    const fileId = this.d.store.newId();
    const rate = scope.mode === 'live' ? await this.d.wallet.knowledgeRate(scope) : 0;
    const cost = scope.mode === 'live' ? uploadCost(extracted.wordCount, rate) : 0;
    const doc = {
      fileId,
      fileName,
      title,
      knowledgebaseId: knowledgebaseIdOf(scope.tenantId),
      wordCount: extracted.wordCount,
      sizeBytes: content.length,
      contentType: CONTENT_TYPE[kind],
      creditsCharged: 0,
      sandbox: scope.mode === 'sandbox',
      createdAt: this.now(),
    };
    await this.d.store.savePending(scope, doc, content, extracted.text);
    return this.charge(scope, fileId, fileName, extracted.wordCount, cost);
  }

  /** Charges a pending upload (live) and makes it visible; undoes it when the wallet cannot cover it. */
  private async charge(
    scope: TenantScope,
    fileId: string,
    fileName: string,
    words: number,
    cost: number,
  ): Promise<KnowledgeDocument> {
    if (cost > 0) {
      const debit = await this.d.wallet.debit(
        scope,
        `knowledge:${fileId}`,
        cost,
        `Knowledge upload ${fileName} (${words} words)`,
      );
      if (debit === 'insufficient') {
        await this.d.store.erase(scope, fileId);
        throw knowledgeReasons.error('insufficient_credits', `the wallet cannot cover this upload's ${cost} credits`);
      }
    }
    const ready = await this.d.store.markReady(scope, fileId, cost);
    if (!ready) throw commonReasons.error('internal_error', 'the stored document vanished');
    return ready;
  }

  /** Reads the upload into memory up to the limit (extraction needs the whole file). */
  private async collect(chunks: AsyncIterable<Buffer>): Promise<Buffer> {
    const parts: Buffer[] = [];
    let size = 0;
    for await (const chunk of chunks) {
      size += chunk.length;
      if (size > this.d.maxFileBytes)
        throw knowledgeReasons.error('payload_too_large', `the file is larger than ${this.d.maxFileBytes} bytes`);
      parts.push(chunk);
    }
    if (size === 0) throw validationError('the file is empty', [{ path: 'file', message: 'zero bytes' }]);
    return Buffer.concat(parts, size);
  }

  /** Finishes uploads a crashed replica left pending: charges them (once, by reference) or undoes them. */
  async recover(before: Date): Promise<number> {
    let done = 0;
    for (const { fileId, scope } of await this.d.store.stalePending(before)) {
      const doc = await this.d.store.get(scope, fileId, true);
      if (!doc) {
        await this.d.store.erase(scope, fileId); // stored bytes without their document
      } else if (doc.status === 'pending') {
        const cost = scope.mode === 'live' ? uploadCost(doc.wordCount, await this.d.wallet.knowledgeRate(scope)) : 0;
        await this.charge(scope, fileId, doc.fileName, doc.wordCount, cost).catch((err: unknown) =>
          this.d.log.warn({ err, fileId }, 'interrupted upload undone'),
        );
      } else {
        await this.d.store.markReady(scope, fileId, doc.creditsCharged);
      }
      done++;
    }
    return done;
  }

  async list(scope: TenantScope, asked: PageAsked): Promise<Page<KnowledgeDocument> & PageAsked> {
    return { ...(await this.d.store.list(scope, asked.page, asked.limit)), ...asked };
  }

  async get(scope: TenantScope, fileId: string): Promise<KnowledgeDocument> {
    const doc = await this.d.store.get(scope, fileId);
    if (!doc) throw notFound('document');
    return doc;
  }

  /**
   * Deletes the document, its bytes and its text, and announces it (agents drop it). The upload's
   * charge stays (it paid for the extraction). It is announced once the document is gone.
   */
  async delete(scope: TenantScope, fileId: string): Promise<void> {
    if (!(await this.d.store.get(scope, fileId))) throw notFound('document');
    await this.d.events.documentDeleted(
      scope,
      fileId,
      this.now(),
      () => this.d.store.erase(scope, fileId),
      this.d.store.erased(scope, fileId),
    );
  }

  async billingInfo(scope: TenantScope): Promise<{
    creditsPerUpload: number;
    creditsPer1000Words: number;
    maxFileSizeBytes: number;
    allowedContentTypes: readonly string[];
    balance: number;
  }> {
    const [rate, balance] = await Promise.all([this.d.wallet.knowledgeRate(scope), this.d.wallet.balance(scope)]);
    return {
      creditsPerUpload: uploadCost(0, rate),
      creditsPer1000Words: rate,
      maxFileSizeBytes: this.d.maxFileBytes,
      allowedContentTypes: ALLOWED_CONTENT_TYPES,
      balance,
    };
  }

  /** The tenant's documents among `fileIds`, in order, and the ids that are unknown or foreign. */
  async resolve(
    scope: TenantScope,
    fileIds: readonly string[],
  ): Promise<{ documents: KnowledgeDocument[]; missing: string[] }> {
    if (fileIds.length > MAX_RESOLVE)
      throw validationError(`at most ${MAX_RESOLVE} documents at once`, [
        { path: 'fileIds', message: `at most ${MAX_RESOLVE}` },
      ]);
    const found = await Promise.all(fileIds.map((id) => this.d.store.get(scope, id)));
    return {
      documents: found.filter((d): d is KnowledgeDocument => d !== null),
      missing: fileIds.filter((_, i) => found[i] === null),
    };
  }

  async text(scope: TenantScope, fileId: string, maxChars: number): Promise<{ text: string; truncated: boolean }> {
    if (!(await this.d.store.get(scope, fileId))) throw notFound('document');
    const full = (await this.d.store.texts.readAll(scope, fileId))?.toString('utf8') ?? '';
    const max = Math.max(0, maxChars || full.length);
    return { text: full.slice(0, max), truncated: full.length > max };
  }
}

/** The content type a document is described with, whatever the client declared (the bytes decided). */
const CONTENT_TYPE = {
  txt: 'text/plain',
  md: 'text/markdown',
  csv: 'text/csv',
  html: 'text/html',
  pdf: 'application/pdf',
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
} as const;

/** A tenant has one knowledge base; its id is stable and does not reveal the tenant id. */
export const knowledgebaseIdOf = (tenantId: string): string =>
  `kb_${createHash('sha256').update(tenantId).digest('hex').slice(0, 20)}`;

/** A plain file name: no path, no control characters, not empty, not too long. */
export function checkFileName(raw: string): string {
  const name = raw.trim();
  const problem =
    name === ''
      ? 'is empty'
      : name.length > MAX_FILE_NAME
        ? `is longer than ${MAX_FILE_NAME} characters`
        : /[/\\]/.test(name)
          ? 'contains a path separator'
          : // eslint-disable-next-line no-control-regex -- refuses control characters on purpose
            /[\u0000-\u001f\u007f]/.test(name)
            ? 'contains control characters'
            : name === '.' || name === '..'
              ? 'is not a file name'
              : undefined;
  if (problem) throw validationError(`the file name ${problem}`, [{ path: 'file', message: `file name ${problem}` }]);
  return name;
}

function refused(err: ExtractionRefused): never {
  if (err.reason === 'unsupported_type' || err.reason === 'type_mismatch')
    throw knowledgeReasons.error('unsupported_media_type', err.message);
  if (err.reason === 'empty') throw validationError('the file is empty', [{ path: 'file', message: 'zero bytes' }]);
  throw knowledgeReasons.error('document_unreadable', err.message);
}

function refusing<T>(f: () => T): T {
  try {
    return f();
  } catch (err) {
    if (err instanceof ExtractionRefused) refused(err);
    throw err;
  }
}

async function refusingAsync<T>(f: () => Promise<T>): Promise<T> {
  try {
    return await f();
  } catch (err) {
    if (err instanceof ExtractionRefused) refused(err);
    throw err;
  }
}
