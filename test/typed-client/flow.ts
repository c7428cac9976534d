import createClient from 'openapi-fetch';
import type { paths } from './generated/api';

// A tenant's flow written against the client that openapi-typescript and openapi-fetch generate
// from the served OpenAPI document (test/e2e/typed-client.e2e.test.ts generates it, typechecks
// this file with it, then runs it): what an SDK user of the document gets.

export interface FlowResult {
  companyId: string;
  listed: string[];
  renamedTo: string;
  balance: number;
  inboundCalls: number;
  refused: { status: number; reasonCode: string | undefined };
}

export async function tenantFlow(baseUrl: string, apiKey: string): Promise<FlowResult> {
  const api = createClient<paths>({ baseUrl, headers: { 'X-API-Key': apiKey } });

  const created = await api.POST('/api/v1/companies', { body: { name: 'Typed Clinic', industry: 'Healthcare', timezone: 'Europe/Berlin' } });
  if (!created.data) throw new Error(`create: ${created.response.status} ${JSON.stringify(created.error)}`);
  const companyId: string = created.data.company.id;

  const list = await api.GET('/api/v1/companies', { params: { query: { page: 1, limit: 10 } } });
  if (!list.data) throw new Error(`list: ${list.response.status}`);

  const renamed = await api.PATCH('/api/v1/companies/{id}', { params: { path: { id: companyId } }, body: { name: 'Typed Clinic GmbH' } });
  if (!renamed.data) throw new Error(`patch: ${renamed.response.status}`);

  const credits = await api.GET('/api/v1/credits');
  if (!credits.data) throw new Error(`credits: ${credits.response.status}`);

  const calls = await api.GET('/api/v1/calls', { params: { query: { direction: 'inbound', limit: 5 } } });
  if (!calls.data) throw new Error(`calls: ${calls.response.status}`);

  // @ts-expect-error a path parameter is required: the generated types must say so
  await api.GET('/api/v1/companies/{id}', {});
  // The documented error body, typed: `limit` above 100 is refused.
  const refused = await api.GET('/api/v1/calls', { params: { query: { limit: 101 } } });

  return {
    companyId,
    listed: list.data.companies.map((c) => c.id),
    renamedTo: renamed.data.company.name,
    balance: credits.data.balance,
    inboundCalls: calls.data.calls.length,
    refused: { status: refused.response.status, reasonCode: refused.error?.reasonCode },
  };
}
