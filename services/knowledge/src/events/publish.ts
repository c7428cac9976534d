import { isDuplicateKeyError, type Outbox } from '@voiceapi/kit';
import { voiceapi } from '@voiceapi/proto';
import type { DocumentEvents } from '../usecases/ports';

const { KnowledgeEvent } = voiceapi.events.v1;

/** The knowledge stream through the outbox, keyed by document. */
export function documentEvents(outbox: Outbox): DocumentEvents {
  return {
    async documentDeleted(scope, fileId, at) {
      // One event per document: a delete retried after a crash finds the one it stored.
      const eventId = `document-deleted:${fileId}`;
      const message = KnowledgeEvent.fromPartial({ occurTime: at, event: { $case: 'documentDeleted', documentDeleted: { tenantId: scope.tenantId, fileId } } });
      try {
        return [await outbox.add(KnowledgeEvent, fileId, message, { hold: true, eventId })];
      } catch (err) {
        if (isDuplicateKeyError(err)) return [eventId];
        throw err;
      }
    },
    release: (ids) => outbox.release(ids),
  };
}
