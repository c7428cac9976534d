import { randomUUID } from 'node:crypto';
import type { Outbox } from '@voiceapi/kit';
import { voiceapi } from '@voiceapi/proto';
import type { CompanyEvents } from '../usecases/ports';

const { CompaniesEvent } = voiceapi.events.v1;

/** The companies stream through the outbox, keyed by company (one company's changes in order). */
export function companyEvents(outbox: Outbox): CompanyEvents {
  return {
    async changed(scope, companyId, change, at) {
      const companyChanged = { tenantId: scope.tenantId, companyId, deleted: change === 'deleted', fields: change === 'deleted' ? [] : [...change] };
      const message = CompaniesEvent.fromPartial({ occurTime: at, event: { $case: 'companyChanged', companyChanged } });
      return [await outbox.add(CompaniesEvent, companyId, message, { hold: true, eventId: `company-changed:${companyId}:${randomUUID()}` })];
    },
    release: (ids) => outbox.release(ids),
    discard: (ids) => outbox.discard(ids),
  };
}
