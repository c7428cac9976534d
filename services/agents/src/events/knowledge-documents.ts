import { requireTenant, type EventSubscriber } from '@voiceapi/kit';
import { voiceapi } from '@voiceapi/proto';
import type { AgentUseCases } from '../usecases/agents';

const { KnowledgeEvent } = voiceapi.events.v1;

/** A deleted knowledge document leaves the agents that linked it (a redelivery finds none left). */
export function followKnowledge(subscriber: EventSubscriber, agents: AgentUseCases): EventSubscriber {
  return subscriber.on(KnowledgeEvent, async (event) => {
    if (event.event?.$case !== 'documentDeleted') return;
    const { tenantId, fileId } = event.event.documentDeleted;
    // A malformed fact is retried, then kept in the dead-letter topic for an operator.
    if (!tenantId || !fileId) throw new Error(`DocumentDeleted without a tenant or file id (${JSON.stringify({ tenantId, fileId })})`);
    await agents.documentDeleted(requireTenant({ tenantId, keyMode: 'live' }), fileId);
  });
}
