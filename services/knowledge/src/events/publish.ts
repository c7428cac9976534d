import { eventRecord, type Announcer } from '@voiceapi/kit/events';
import { voiceapi } from '@voiceapi/proto';
import type { DocumentEvents } from '../usecases/ports';

const { KnowledgeEvent } = voiceapi.events.v1;

/** The knowledge stream through the outbox, keyed by document. */
export function documentEvents(outbox: Announcer): DocumentEvents {
  return {
    documentDeleted(scope, fileId, at, erase, readBack) {
      const message = KnowledgeEvent.fromPartial({
        occurTime: at,
        event: { $case: 'documentDeleted', documentDeleted: { tenantId: scope.tenantId, fileId } },
      });
      // One event per document: a delete retried after a crash finds the one it stored.
      return outbox.announce([eventRecord(KnowledgeEvent, fileId, message, `document-deleted:${fileId}`)], erase, {
        readBack,
      });
    },
  };
}
