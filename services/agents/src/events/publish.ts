import { eventRecord, type Announcer } from '@voiceapi/kit/events';
import { voiceapi } from '@voiceapi/proto';
import type { AgentEvents } from '../usecases/ports';

const { AgentsEvent } = voiceapi.events.v1;

/** The agents stream through the outbox, keyed by agent (one agent's events in order). */
export function agentEvents(outbox: Announcer): AgentEvents {
  return {
    scriptReady(scope, agentId, generation, generatedAt, write, readBack) {
      const message = AgentsEvent.fromPartial({
        occurTime: generatedAt,
        event: {
          $case: 'scriptReady',
          scriptReady: {
            tenantId: scope.tenantId,
            agentId,
            sandbox: scope.mode === 'sandbox',
            generateTime: generatedAt,
          },
        },
      });
      // One event per generation: a job retried after a crash finds the one it stored.
      const event = eventRecord(AgentsEvent, agentId, message, `script-ready:${agentId}:${generation}`);
      return outbox.announce([event], write, { applied: (r) => r !== null, readBack });
    },
  };
}
