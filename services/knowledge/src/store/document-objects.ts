import { type TenantScope } from '@voiceapi/kit/grpc';
import { BlobStore } from '@voiceapi/kit/mongo';
import { type ObjectStore } from '@voiceapi/kit/objects';
import type { Connection } from 'mongoose';

/**
 * One kind of a document's content (the uploaded original, or its extracted text) in object
 * storage, under `<tenant>/<file id>/<kind>`. Content stored before knowledge 1.2 (in the
 * operational store's `document_<kind>s`) stays readable and erasable there (decision 0136).
 */
export class DocumentObjects {
  private readonly legacy: BlobStore;

  constructor(
    conn: Connection,
    private readonly objects: ObjectStore,
    private readonly kind: 'content' | 'text',
  ) {
    this.legacy = new BlobStore(conn, `document_${kind}s`);
  }

  private key(scope: TenantScope, fileId: string): string {
    return `${scope.tenantId}/${fileId}/${this.kind}`;
  }

  /** Stores the bytes (at most an upload's 20 MB); a replay of the same id writes the same. */
  save(scope: TenantScope, fileId: string, blob: { contentType: string; data: Buffer }): Promise<void> {
    return this.objects.put(this.key(scope, fileId), blob.data, {
      contentType: blob.contentType,
      sizeBytes: blob.data.length,
    });
  }

  async readAll(scope: TenantScope, fileId: string): Promise<Buffer | null> {
    return (await this.objects.getAll(this.key(scope, fileId))) ?? this.legacy.readAll(scope, fileId);
  }

  /** Deletes it wherever it is; erasing again finds nothing. */
  async erase(scope: TenantScope, fileId: string): Promise<void> {
    await this.objects.delete(this.key(scope, fileId));
    await this.legacy.erase(scope, fileId);
  }
}
