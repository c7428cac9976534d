import { type TenantScope } from '@voiceapi/kit/grpc';
import { isDuplicateKeyError, modelOf, TenantCollection, type QueryShape } from '@voiceapi/kit/mongo';
import { Schema, type Connection } from 'mongoose';
import type { EventRoute } from '../domain/event-route';

interface RouteDoc extends EventRoute {
  /** `<tenantId>:<eventType>`: an event is routed with one lookup by `_id`. */
  _id: string;
  tenantId: string;
}

export const routeSchema = new Schema<RouteDoc>(
  {
    _id: String,
    tenantId: { type: String, required: true },
    eventType: { type: String, required: true },
    campaignId: { type: String, required: true },
    createdAt: { type: Date, required: true },
  },
  { collection: 'event_routes', versionKey: false },
);
// Serves `all` (the tenant's routes, oldest first).
routeSchema.index({ tenantId: 1, createdAt: 1 });
export const routeQueryShapes: QueryShape[] = [{ name: 'all', equality: ['tenantId'], sort: { createdAt: 1 } }];

const key = (scope: TenantScope, eventType: string) => `${scope.tenantId}:${eventType}`;
const toRoute = ({ eventType, campaignId, createdAt }: RouteDoc): EventRoute => ({ eventType, campaignId, createdAt });

/** A tenant has few routes (one per event type of its CRM): the list is read whole. */
export const MAX_ROUTES = 1000;

export class EventRouteStore {
  private readonly routes: TenantCollection<RouteDoc, string>;

  constructor(conn: Connection) {
    this.routes = new TenantCollection(
      modelOf(conn, 'EventRoute', routeSchema),
      { parse: (id) => (id.length > 0 && id.length <= 400 ? id : undefined) },
      routeQueryShapes,
    );
  }

  async get(scope: TenantScope, eventType: string): Promise<EventRoute | null> {
    const doc = await this.routes.findById(scope, key(scope, eventType));
    return doc && toRoute(doc);
  }

  async list(scope: TenantScope): Promise<EventRoute[]> {
    return (await this.routes.find(scope, {}, { sort: { createdAt: 1 }, limit: MAX_ROUTES })).map(toRoute);
  }

  count(scope: TenantScope): Promise<number> {
    return this.routes.count(scope, {});
  }

  /** Creates the route, or points the existing one at another campaign (it keeps its creation time). */
  async put(scope: TenantScope, eventType: string, campaignId: string, now: Date): Promise<EventRoute> {
    const moved = await this.routes.updateById(scope, key(scope, eventType), { $set: { campaignId } });
    if (moved) return toRoute(moved);
    try {
      return toRoute(
        await this.routes.insert(scope, { _id: key(scope, eventType), eventType, campaignId, createdAt: now }),
      );
    } catch (err) {
      if (!isDuplicateKeyError(err)) throw err;
      const again = await this.routes.updateById(scope, key(scope, eventType), { $set: { campaignId } });
      if (!again) throw err;
      return toRoute(again);
    }
  }

  delete(scope: TenantScope, eventType: string): Promise<boolean> {
    return this.routes.deleteById(scope, key(scope, eventType));
  }
}
