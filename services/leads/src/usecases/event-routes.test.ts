import { DomainError } from '@voiceapi/kit/errors';
import { requireTenant } from '@voiceapi/kit/grpc';
import type { CampaignStore } from '../store/campaign-store';
import { MAX_ROUTES, type EventRouteStore } from '../store/event-route-store';
import { EventRoutes } from './event-routes';

// The rules of routing a CRM event to a campaign, with the stores faked.
const scope = requireTenant({ tenantId: 't1', keyMode: 'live' });
const NOW = new Date('2026-11-25T10:00:00Z');
const reasonOf = (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (e: unknown) => (e instanceof DomainError ? e.reasonCode : String(e)),
  );

function routesWith(opts: { campaigns?: string[]; routes?: string[] }) {
  const routes = new Map((opts.routes ?? []).map((t) => [t, 'c1']));
  const writes: string[] = [];
  const store = {
    get: async (_s: unknown, t: string) =>
      routes.has(t) ? { eventType: t, campaignId: routes.get(t)!, createdAt: NOW } : null,
    count: async () => routes.size,
    put: async (_s: unknown, eventType: string, campaignId: string, at: Date) => (
      writes.push(eventType),
      routes.set(eventType, campaignId),
      { eventType, campaignId, createdAt: at }
    ),
    delete: async (_s: unknown, t: string) => routes.delete(t),
    list: async () => [],
  } as unknown as EventRouteStore;
  const campaigns = {
    get: async (_s: unknown, id: string) => ((opts.campaigns ?? ['c1']).includes(id) ? { id } : null),
  } as unknown as CampaignStore;
  return { uc: new EventRoutes(store, campaigns, () => NOW), writes };
}

describe('EventRoutes', () => {
  it('routes an event type to one of the tenant’s campaigns', async () => {
    const { uc, writes } = routesWith({});
    expect(await uc.put(scope, 'deal.won', 'c1')).toEqual({ eventType: 'deal.won', campaignId: 'c1', createdAt: NOW });
    expect(writes).toEqual(['deal.won']);
  });

  it('refuses an event type CRMs do not write, and a campaign the tenant does not have, before writing', async () => {
    const { uc, writes } = routesWith({});
    expect(await reasonOf(uc.put(scope, '.starts-with-a-dot', 'c1'))).toBe('validation_error');
    expect(await reasonOf(uc.put(scope, 'x'.repeat(101), 'c1'))).toBe('validation_error');
    expect(await reasonOf(uc.put(scope, 'deal.won', 'someone-elses'))).toBe('campaign_not_found');
    expect(writes).toEqual([]);
  });

  it(`keeps at most ${MAX_ROUTES} routes, and still lets one of them be pointed elsewhere`, async () => {
    const full = Array.from({ length: MAX_ROUTES }, (_, i) => `event.${i}`);
    const { uc } = routesWith({ campaigns: ['c1', 'c2'], routes: full });
    expect(await reasonOf(uc.put(scope, 'one.more', 'c1'))).toBe('validation_error');
    expect(await reasonOf(uc.put(scope, 'event.0', 'c2'))).toBe('ok');
  });

  it('answers not_found for deleting a route that is not there', async () => {
    const { uc } = routesWith({ routes: ['deal.won'] });
    expect(await reasonOf(uc.delete(scope, 'deal.won'))).toBe('ok');
    expect(await reasonOf(uc.delete(scope, 'deal.won'))).toBe('not_found');
  });
});
