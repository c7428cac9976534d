import { randomUUID } from 'node:crypto';
import { eventRecord, type Announcer } from '@voiceapi/kit/events';
import { voiceapi } from '@voiceapi/proto';
import type { CompanyEvents } from '../usecases/ports';

const { CompaniesEvent } = voiceapi.events.v1;

/** The companies stream through the outbox, keyed by company (one company's changes in order). */
export function companyEvents(outbox: Announcer): CompanyEvents {
  return {
    changed(scope, companyId, change, at, write, readBack) {
      const companyChanged = {
        tenantId: scope.tenantId,
        companyId,
        deleted: change === 'deleted',
        fields: change === 'deleted' ? [] : [...change],
      };
      const message = CompaniesEvent.fromPartial({ occurTime: at, event: { $case: 'companyChanged', companyChanged } });
      const event = eventRecord(CompaniesEvent, companyId, message, `company-changed:${companyId}:${randomUUID()}`);
      return outbox.announce([event], write, { applied: (r) => r !== null && r !== false, readBack });
    },
  };
}
