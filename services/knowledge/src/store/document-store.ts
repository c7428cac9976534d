import { type ReadBack } from '@voiceapi/kit/events';
import { scopeOfRecord, type TenantScope } from '@voiceapi/kit/grpc';
import { modelOf, objectIds, stringIds, TenantCollection, type Page, type QueryShape } from '@voiceapi/kit/mongo';
import { type ObjectStore } from '@voiceapi/kit/objects';
import { Schema, Types, type Connection } from 'mongoose';
import type { KnowledgeDocument } from '../domain/document';
import { DocumentObjects } from './document-objects';

interface DocumentDoc extends Omit<KnowledgeDocument, 'fileId'> {
  _id: Types.ObjectId;
  tenantId: string;
}

/** An upload between storing and charging: recovery's small working set, by `_id` (the file id). */
interface PendingDoc {
  _id: string;
  tenantId: string;
  mode: 'live' | 'sandbox';
  createdAt: Date;
}

export const documentSchema = new Schema<DocumentDoc>(
  {
    tenantId: { type: String, required: true },
    fileName: { type: String, required: true },
    title: { type: String, required: true },
    knowledgebaseId: { type: String, required: true },
    wordCount: { type: Number, required: true },
    sizeBytes: { type: Number, required: true },
    contentType: { type: String, required: true },
    creditsCharged: { type: Number, required: true },
    sandbox: { type: Boolean, required: true },
    status: { type: String, required: true },
    createdAt: { type: Date, required: true },
  },
  { collection: 'documents', versionKey: false },
);
// Serves `newest` (the list page): a tenant's ready documents, newest first.
documentSchema.index({ tenantId: 1, status: 1, createdAt: -1, _id: -1 });
export const pendingSchema = new Schema<PendingDoc>(
  {
    _id: String,
    tenantId: { type: String, required: true },
    mode: { type: String, required: true },
    createdAt: { type: Date, required: true },
  },
  { collection: 'pending_uploads', versionKey: false },
);
// Serves `interrupted` (the recovery: uploads pending since before a moment).
pendingSchema.index({ createdAt: 1 });
export const pendingQueryShapes: QueryShape[] = [{ name: 'interrupted', equality: [], range: ['createdAt'] }];

const NEWEST_FIRST = { createdAt: -1, _id: -1 } as const;
export const documentQueryShapes: QueryShape[] = [
  { name: 'newest', equality: ['tenantId', 'status'], sort: NEWEST_FIRST },
];

function toDocument(doc: DocumentDoc): KnowledgeDocument {
  const { _id, tenantId: _tenant, ...rest } = doc;
  return { fileId: _id.toString(), ...rest };
}

/** Documents, their original bytes and their extracted text; tenant-scoped by construction. */
export class DocumentStore {
  private readonly documents: TenantCollection<DocumentDoc>;
  private readonly pending: TenantCollection<PendingDoc, string>;
  readonly contents: DocumentObjects;
  readonly texts: DocumentObjects;

  constructor(conn: Connection, objects: ObjectStore) {
    this.documents = new TenantCollection(
      modelOf(conn, 'KnowledgeDocument', documentSchema),
      objectIds,
      documentQueryShapes,
    );
    this.pending = new TenantCollection(modelOf(conn, 'PendingUpload', pendingSchema), stringIds, pendingQueryShapes);
    this.contents = new DocumentObjects(conn, objects, 'content');
    this.texts = new DocumentObjects(conn, objects, 'text');
  }

  newId(): string {
    return new Types.ObjectId().toHexString();
  }

  /**
   * Stores bytes, text and a pending document, noting it for recovery first, so that a crash at
   * any point leaves either nothing visible or something recovery finishes or undoes.
   */
  async savePending(
    scope: TenantScope,
    doc: Omit<KnowledgeDocument, 'status'>,
    content: Buffer,
    text: string,
  ): Promise<void> {
    await this.pending.insert(scope, { _id: doc.fileId, mode: scope.mode, createdAt: doc.createdAt });
    await this.contents.save(scope, doc.fileId, { contentType: doc.contentType, data: content });
    await this.texts.save(scope, doc.fileId, {
      contentType: 'text/plain; charset=utf-8',
      data: Buffer.from(text, 'utf8'),
    });
    const { fileId, ...fields } = doc;
    await this.documents.insert(scope, { _id: new Types.ObjectId(fileId), ...fields, status: 'pending' });
  }

  /** Makes a charged (or free) upload visible and forgets it for recovery. */
  async markReady(scope: TenantScope, fileId: string, creditsCharged: number): Promise<KnowledgeDocument | null> {
    const doc = await this.documents.updateById(scope, fileId, { $set: { status: 'ready', creditsCharged } });
    await this.pending.deleteById(scope, fileId);
    return doc && toDocument(doc);
  }

  /** Removes a document with its bytes and text: metadata first, so nothing half-erased stays visible. */
  /** An erase happened once the document is gone (it goes first; its bytes and text follow). */
  erased(scope: TenantScope, fileId: string): ReadBack {
    return this.documents.readBack(scope, fileId, 'absent');
  }

  async erase(scope: TenantScope, fileId: string): Promise<boolean> {
    const existed = await this.documents.deleteById(scope, fileId);
    await this.contents.erase(scope, fileId);
    await this.texts.erase(scope, fileId);
    await this.pending.deleteById(scope, fileId);
    return existed;
  }

  async get(scope: TenantScope, fileId: string, includePending = false): Promise<KnowledgeDocument | null> {
    const doc = await this.documents.findById(scope, fileId);
    return doc && (includePending || doc.status === 'ready') ? toDocument(doc) : null;
  }

  async list(scope: TenantScope, page: number, limit: number): Promise<Page<KnowledgeDocument>> {
    const res = await this.documents.page(scope, { status: 'ready' }, { sort: NEWEST_FIRST, page, limit });
    return { ...res, items: res.items.map(toDocument) };
  }

  /** Uploads pending since before `before`, across tenants (recovery). */
  async stalePending(before: Date): Promise<{ fileId: string; scope: TenantScope }[]> {
    const rows = await this.pending
      .crossTenant('recovery of interrupted uploads')
      .find({ createdAt: { $lt: before } }, { limit: 100 });
    return rows.map((r) => ({ fileId: r._id, scope: scopeOfRecord(r.tenantId, r.mode) }));
  }
}
