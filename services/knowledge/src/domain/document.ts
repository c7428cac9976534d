/** A knowledge document's metadata (the domain object). Its bytes and text live in blob stores. */
export interface KnowledgeDocument {
  fileId: string;
  fileName: string;
  title: string;
  knowledgebaseId: string;
  wordCount: number;
  sizeBytes: number;
  contentType: string;
  creditsCharged: number;
  sandbox: boolean;
  /** `pending` between storing and charging: invisible to every read but recovery's. */
  status: 'pending' | 'ready';
  createdAt: Date;
}
