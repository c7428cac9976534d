import { openObjectStore } from '@voiceapi/kit/objects';
import type { OpenedService } from '@voiceapi/kit/service';
import type { Config } from '../config';
import { DocumentStore } from '../store/document-store';

export type Stores = Awaited<ReturnType<typeof openStores>>;

/** Documents in knowledge's database, their files and extracted text in its bucket. */
export async function openStores({ cfg, conn, lifecycle }: OpenedService<Config>) {
  return { documents: new DocumentStore(conn, await openObjectStore(cfg, lifecycle)) };
}
