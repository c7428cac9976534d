import type { ServiceClients } from '../../clients';
import { withBodyFields } from '../../http/errors';
import { defineRoute } from '../../http/route';
import { z } from '../../http/zod';
import type { OperatorUseCases } from '../../operator/operator';
import { TenantParam } from '../admin/schemas';
import { numberJson } from './mappers';
import { AssignedNumber, Concurrency, InboundSimulation, PhoneNumber, PoolNumber } from './schemas';

const TENANT_404 = { 404: 'No such tenant (`not_found`)' };

/** What the dashboard does for telephony: the number pool, assignments, concurrency packages, and the carrier simulator's inbound calls. */
export function telephonyOperatorRoutes(clients: ServiceClients, op: OperatorUseCases) {
  // Operators act live for the tenant (the services refuse a call without a key mode).
  const tenantCall = async (tenantId: string, requestId: string) => {
    await op.assertTenant(tenantId);
    return { requestId, tenantId, keyMode: 'live' as const };
  };
  return [
    defineRoute({
      method: 'post',
      path: '/number-pool',
      tag: 'Numbers',
      summary: 'Offer a number for purchase by any tenant',
      body: PoolNumber,
      responses: { 201: { description: 'In the pool', schema: z.object({ number: PhoneNumber }) } },
      errors: { 409: 'The number is in the pool or owned already (`conflict`)' },
      handler: async ({ body }, { requestId }) => {
        const res = await withBodyFields(clients.telephony.addPoolNumber(body, { requestId }));
        return { status: 201, body: { number: numberJson(res.number) } };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/tenants/{tenantId}/numbers',
      tag: 'Numbers',
      summary: 'Give a number to a tenant without a charge',
      params: TenantParam,
      body: AssignedNumber,
      responses: { 201: { description: 'The tenant’s now', schema: z.object({ number: PhoneNumber }) } },
      errors: { ...TENANT_404, 409: 'Some tenant owns the number already (`number_already_owned`)' },
      handler: async ({ params, body }, { requestId }) => {
        const res = await withBodyFields(
          clients.telephony.assignNumber(body, await tenantCall(params.tenantId, requestId)),
        );
        return { status: 201, body: { number: numberJson(res.number) } };
      },
    }),
    defineRoute({
      method: 'put',
      path: '/tenants/{tenantId}/concurrency',
      tag: 'Numbers',
      summary: 'Set a tenant’s concurrency package',
      description:
        'Calls in progress at once, inbound and outbound together (default 10). Lowering it takes effect as calls end.',
      params: TenantParam,
      body: Concurrency,
      responses: { 200: { description: 'Set', schema: Concurrency } },
      errors: TENANT_404,
      handler: async ({ params, body }, { requestId }) => {
        const res = await withBodyFields(
          clients.telephony.setConcurrency(body, await tenantCall(params.tenantId, requestId)),
        );
        return { status: 200, body: { maxConcurrentCalls: res.maxConcurrentCalls } };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/tenants/{tenantId}/simulate/inbound-call',
      tag: 'Numbers',
      summary: 'The carrier simulator rings a tenant’s number',
      description:
        'The call goes to the number’s active agent, or to the platform’s default answering when none is active; it is recorded in the feed and billed at the inbound rate.',
      params: TenantParam,
      body: InboundSimulation,
      responses: { 202: { description: 'Ringing', schema: z.object({ callId: z.string() }) } },
      errors: { 404: 'No such tenant, or the tenant does not own `toNumber` (`not_found`)' },
      handler: async ({ params, body }, { requestId }) => {
        const res = await withBodyFields(
          clients.telephony.simulateInboundCall(body, await tenantCall(params.tenantId, requestId)),
        );
        return { status: 202, body: { callId: res.callId } };
      },
    }),
  ];
}
