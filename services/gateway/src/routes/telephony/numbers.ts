// The number routes: `GET /numbers`, `GET /numbers/available` and `POST /numbers/purchase`.
import type { ServiceClients } from '../../clients';
import { withBodyFields } from '../../http/errors';
import { Pagination, pagination } from '../../http/pagination';
import { defineRoute } from '../../http/route';
import { z } from '../../http/zod';
import { numberJson } from './mappers';
import { AvailableQuery, ContactCallsQuery, PhoneNumber, Purchase, Purchased, SandboxAccepted } from './schemas';

/** The tenant’s phone numbers, the pool’s numbers for sale, and buying one. */
export function numberRoutes(clients: ServiceClients) {
  return [
    defineRoute({
      method: 'get',
      path: '/numbers',
      tag: 'Numbers',
      summary: 'The tenant’s phone numbers',
      scopes: ['inbound:read'],
      query: ContactCallsQuery,
      responses: {
        200: {
          description: 'A page of owned numbers, newest first',
          schema: z.object({ numbers: z.array(PhoneNumber), pagination: Pagination }),
        },
      },
      handler: async ({ query }, { call }) => {
        const res = await clients.telephony.listNumbers({ page: { page: query.page, limit: query.limit } }, call);
        return { status: 200, body: { numbers: res.numbers.map(numberJson), pagination: pagination(query, res.page) } };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/numbers/available',
      tag: 'Numbers',
      operationId: 'listAvailableNumbers',
      summary: 'Pool numbers for sale',
      scopes: ['inbound:read'],
      query: AvailableQuery,
      responses: {
        200: {
          description: 'Numbers of the pool, in number order',
          schema: z.object({ numbers: z.array(PhoneNumber) }),
        },
      },
      handler: async ({ query }, { call }) => {
        const res = await clients.telephony.listAvailableNumbers(
          {
            limit: query.limit,
            ...(query.countryIso && { countryIso: query.countryIso }),
            ...(query.contains && { contains: query.contains }),
          },
          call,
        );
        return { status: 200, body: { numbers: res.numbers.map(numberJson) } };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/numbers/purchase',
      tag: 'Numbers',
      summary: 'Buy a pool number',
      description:
        'Debits the number’s `monthlyCredits` (a `number_purchase` ledger row). A number is sold once: whoever buys it first gets it, however many ' +
        'buy at the same instant. Sandbox keys get 202 `sandbox_accepted` and nothing changes.',
      operationId: 'purchaseNumber',
      scopes: ['inbound:write'],
      body: Purchase,
      responses: {
        201: { description: 'Bought', schema: Purchased },
        202: { description: 'Sandbox: accepted, nothing bought or charged', schema: SandboxAccepted },
      },
      errors: {
        402: 'The wallet cannot cover the number’s monthly credits (`insufficient_credits`)',
        409: 'Some tenant owns the number already, this one included (`number_already_owned`)',
        422: 'The number is not in the pool (`number_not_found`)',
      },
      handler: async ({ body }, { call }) => {
        const res = await withBodyFields(clients.telephony.purchaseNumber({ phoneNumber: body.phoneNumber }, call));
        if (res.status === 'sandbox_accepted') return { status: 202, body: { status: 'sandbox_accepted' as const } };
        return {
          status: 201,
          body: { number: numberJson(res.number), creditsCharged: res.creditsCharged, balanceAfter: res.balanceAfter },
        };
      },
    }),
  ];
}
