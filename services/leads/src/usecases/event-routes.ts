import { notFound, validationError } from '@voiceapi/kit/errors';
import { type TenantScope } from '@voiceapi/kit/grpc';
import { leadsReasons } from '../reasons';
import type { CampaignStore } from '../store/campaign-store';
import { MAX_ROUTES, type EventRouteStore } from '../store/event-route-store';
import type { EventRoute } from '../domain/event-route';

/** Letters, digits and `. _ : -`, as CRMs name their events (`deal.won`, `form:submitted`). */
export const EVENT_TYPE = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,99}$/;

export class EventRoutes {
  constructor(
    private readonly routes: EventRouteStore,
    private readonly campaigns: CampaignStore,
    private readonly now: () => Date = () => new Date(),
  ) {}

  list(scope: TenantScope): Promise<EventRoute[]> {
    return this.routes.list(scope);
  }

  async put(scope: TenantScope, eventType: string, campaignId: string): Promise<EventRoute> {
    checkEventType(eventType);
    if (!(await this.campaigns.get(scope, campaignId))) {
      throw leadsReasons.error('campaign_not_found', 'no such campaign for this tenant', [
        { path: 'campaignId', message: 'unknown' },
      ]);
    }
    if (!(await this.routes.get(scope, eventType)) && (await this.routes.count(scope)) >= MAX_ROUTES) {
      throw validationError(`a tenant has at most ${MAX_ROUTES} event routes`, [
        { path: 'eventType', message: 'too many routes' },
      ]);
    }
    return this.routes.put(scope, eventType, campaignId, this.now());
  }

  async delete(scope: TenantScope, eventType: string): Promise<void> {
    checkEventType(eventType);
    if (!(await this.routes.delete(scope, eventType))) throw notFound('event route');
  }
}

function checkEventType(eventType: string): void {
  if (!EVENT_TYPE.test(eventType)) {
    throw validationError(
      'eventType must be 1–100 letters, digits, ".", "_", ":" or "-", starting with a letter or digit',
      [{ path: 'eventType', message: 'invalid' }],
    );
  }
}
