// The analytics route: `GET /analytics/calls`.
import type { ServiceClients } from '../../clients';
import { defineRoute } from '../../http/route';
import { z } from '../../http/zod';
import { bucketJson } from './mappers';
import { AnalyticsBucket, AnalyticsQuery } from './schemas';

const DAY_MS = 86_400_000;

/** Call aggregates by day, agent or campaign, from telephony’s rollups. */
export function analyticsRoutes(clients: ServiceClients) {
  return [
    defineRoute({
      method: 'get',
      path: '/analytics/calls',
      tag: 'Analytics',
      operationId: 'getCallAnalytics',
      summary: 'Call aggregates by day, agent or campaign',
      description:
        'Read from rollups kept as calls end and are billed (per quarter hour), never by scanning calls. A call counts in the quarter hour it started; ' +
        '`from` is applied at that granularity. Days are formed in `timezone` (UTC by default). The range is at most 366 days; by default the last 30.',
      scopes: ['analytics:read'],
      query: AnalyticsQuery,
      responses: {
        200: {
          description: 'The buckets',
          schema: z.object({ groupBy: AnalyticsQuery.shape.groupBy, buckets: z.array(AnalyticsBucket) }),
        },
      },
      handler: async ({ query }, { call }) => {
        const to = query.to ? new Date(query.to) : new Date();
        const from = query.from ? new Date(query.from) : new Date(to.getTime() - 30 * DAY_MS);
        const res = await clients.telephony.callAnalytics(
          {
            groupBy: query.groupBy,
            from,
            to,
            ...(query.direction && { direction: query.direction }),
            ...(query.timezone && { timeZone: query.timezone }),
          },
          call,
        );
        return { status: 200, body: { groupBy: query.groupBy, buckets: res.buckets.map(bucketJson) } };
      },
    }),
  ];
}
