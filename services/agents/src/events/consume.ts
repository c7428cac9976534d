import { type EventSubscriber } from '@voiceapi/kit/events';
import { scopeOfRecord } from '@voiceapi/kit/grpc';
import { voiceapi } from '@voiceapi/proto';
import type { Agents } from '../usecases/agents';

const { KnowledgeEvent, CompaniesEvent } = voiceapi.events.v1;

/**
 * What agents' scripts are written from, changed elsewhere: a deleted knowledge document leaves the
 * agents that linked it, a changed or deleted company makes their scripts stale. A malformed fact
 * is retried, then kept in the dead-letter topic for an operator.
 */
export function followScriptInputs(subscriber: EventSubscriber, agents: Agents): EventSubscriber {
  return subscriber
    .on(KnowledgeEvent, async (event) => {
      if (event.event?.$case !== 'documentDeleted') return;
      const { tenantId, fileId } = event.event.documentDeleted;
      if (!tenantId || !fileId)
        throw new Error(`DocumentDeleted without a tenant or file id (${JSON.stringify({ tenantId, fileId })})`);
      await agents.documentDeleted(scopeOfRecord(tenantId), fileId);
    })
    .on(CompaniesEvent, async (event) => {
      if (event.event?.$case !== 'companyChanged') return;
      const { tenantId, companyId, deleted, fields } = event.event.companyChanged;
      if (!tenantId || !companyId)
        throw new Error(`CompanyChanged without a tenant or company id (${JSON.stringify({ tenantId, companyId })})`);
      await agents.companyChanged(scopeOfRecord(tenantId), companyId, deleted ? 'deleted' : fields);
    });
}
