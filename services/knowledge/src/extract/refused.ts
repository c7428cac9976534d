export type RefusalReason = 'unsupported_type' | 'type_mismatch' | 'empty' | 'unreadable' | 'archive_too_large';

/** The upload's own fault: the service answers with `reason` and does not store the document. */
export class ExtractionRefused extends Error {
  constructor(
    readonly reason: RefusalReason,
    message: string,
  ) {
    super(message);
    this.name = 'ExtractionRefused';
  }
}
