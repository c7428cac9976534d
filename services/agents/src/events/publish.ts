import { isDuplicateKeyError, type Outbox } from '@voiceapi/kit';
import { voiceapi } from '@voiceapi/proto';
import type { AgentEvents } from '../usecases/ports';

const { AgentsEvent } = voiceapi.events.v1;

/** The agents stream through the outbox, keyed by agent (one agent's events in order). */
export function agentEvents(outbox: Outbox): AgentEvents {
  return {
    async scriptReady(scope, agentId, generation, generatedAt) {
      // One event per generation: a job retried after a crash finds the one it stored.
      const eventId = `script-ready:${agentId}:${generation}`;
      const message = AgentsEvent.fromPartial({
        occurTime: generatedAt,
        event: { $case: 'scriptReady', scriptReady: { tenantId: scope.tenantId, agentId, sandbox: scope.mode === 'sandbox', generateTime: generatedAt } },
      });
      try {
        return [await outbox.add(AgentsEvent, agentId, message, { hold: true, eventId })];
      } catch (err) {
        if (isDuplicateKeyError(err)) return [eventId];
        throw err;
      }
    },
    release: (ids) => outbox.release(ids),
    discard: (ids) => outbox.discard(ids),
  };
}
