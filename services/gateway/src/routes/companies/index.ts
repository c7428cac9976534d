import type { ServiceClients } from '../../clients';
import { withBodyFields } from '../../http/errors';
import { IdParam, PageQuery, Pagination, pagination } from '../../http/pagination';
import { defineRoute } from '../../http/route';
import { z } from '../../http/zod';
import { companyJson, updateRequest } from './mappers';
import { Company, CompanyCreate, CompanyEnvelope, CompanyPatch } from './schemas';

/** Company profiles (`companies:read`, `companies:write`), owned by the companies service. */
export function companyRoutes(clients: ServiceClients) {
  const tag = 'Companies';
  const notFound = { 404: 'No such company for this tenant (`not_found`)' };
  return [
    defineRoute({
      method: 'get',
      path: '/companies',
      tag,
      summary: 'List company profiles',
      scopes: ['companies:read'],
      query: PageQuery,
      responses: {
        200: {
          description: 'A page of companies, newest first',
          schema: z.object({ companies: z.array(Company), pagination: Pagination }),
        },
      },
      handler: async ({ query }, { call }) => {
        const res = await clients.companies.listCompanies({ page: { page: query.page, limit: query.limit } }, call);
        return {
          status: 200,
          body: {
            companies: res.companies.map(companyJson),
            pagination: pagination(query, res.page),
          },
        };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/companies',
      tag,
      summary: 'Create a company profile',
      scopes: ['companies:write'],
      body: CompanyCreate,
      responses: { 201: { description: 'Created', schema: CompanyEnvelope } },
      handler: async ({ body }, { call }) => {
        const res = await withBodyFields(clients.companies.createCompany({ fields: body }, call));
        return { status: 201, body: { company: companyJson(res.company) } };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/companies/{id}',
      tag,
      summary: 'Get a company profile',
      scopes: ['companies:read'],
      params: IdParam,
      responses: { 200: { description: 'The company', schema: CompanyEnvelope } },
      errors: notFound,
      handler: async ({ params }, { call }) => {
        const res = await clients.companies.getCompany({ id: params.id }, call);
        return { status: 200, body: { company: companyJson(res.company) } };
      },
    }),
    defineRoute({
      method: 'patch',
      path: '/companies/{id}',
      tag,
      summary: 'Update a company profile',
      description:
        'Send only the fields to change; `null` removes a field (every field but `name`). `omniChannelSettings` and unknown fields are refused with 400.',
      scopes: ['companies:write'],
      params: IdParam,
      body: CompanyPatch,
      responses: { 200: { description: 'The updated company', schema: CompanyEnvelope } },
      errors: notFound,
      handler: async ({ params, body }, { call }) => {
        const res = await withBodyFields(clients.companies.updateCompany(updateRequest(params.id, body), call));
        return { status: 200, body: { company: companyJson(res.company) } };
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/companies/{id}',
      tag,
      summary: 'Delete a company profile',
      scopes: ['companies:write'],
      params: IdParam,
      responses: { 204: { description: 'Deleted' } },
      errors: notFound,
      handler: async ({ params }, { call }) => {
        await clients.companies.deleteCompany({ id: params.id }, call);
        return { status: 204 };
      },
    }),
  ];
}
