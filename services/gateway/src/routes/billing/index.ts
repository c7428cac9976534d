import type { ServiceClients } from '../../clients';
import { pagination } from '../../http/pagination';
import { defineRoute } from '../../http/route';
import type { OperatorUseCases } from '../../operator/operator';
import { TenantParam } from '../admin/schemas';
import { balanceJson, listTransactionsRequest, topUpRequest, transactionJson } from './mappers';
import { Balance, TopUp, TopUpResult, TransactionPage, TransactionsQuery } from './schemas';

/** The credit wallet and its ledger (`credits:read`), owned by the billing service. */
export function creditRoutes(clients: ServiceClients) {
  const tag = 'Credits';
  return [
    defineRoute({
      method: 'get',
      path: '/credits',
      tag,
      summary: 'Get the credit balance',
      description:
        '`balance` is the sum of all ledger amounts; `held` is reserved by live calls in progress; `available` = `balance` − `held`. ' +
        'Sandbox and live keys see the same wallet.',
      operationId: 'getCredits',
      scopes: ['credits:read'],
      responses: { 200: { description: 'The wallet', schema: Balance } },
      handler: async (_input, { call }) => {
        const res = await clients.billing.getBalance({}, call);
        return { status: 200, body: balanceJson(res.balance) };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/credits/transactions',
      tag,
      summary: 'List credit ledger rows',
      description:
        'Ledger rows, newest first. Ledger amounts are authoritative: reconcile usage with them, never with call duration × an assumed rate. ' +
        'Debits are negative amounts; each row carries the balance right after it. `type=call_deduction` selects call usage rows.',
      operationId: 'listCreditTransactions',
      scopes: ['credits:read'],
      query: TransactionsQuery,
      responses: { 200: { description: 'A page of ledger rows, newest first', schema: TransactionPage } },
      handler: async ({ query }, { call }) => {
        const res = await clients.billing.listTransactions(listTransactionsRequest(query), call);
        return {
          status: 200,
          body: {
            transactions: res.transactions.map(transactionJson),
            pagination: pagination(query, res.page),
          },
        };
      },
    }),
  ];
}

/** Operator top-ups of a tenant's wallet. */
export function creditTopUpRoutes(clients: ServiceClients, op: OperatorUseCases) {
  return [
    defineRoute({
      method: 'post',
      path: '/tenants/{tenantId}/credits',
      tag: 'Credits',
      summary: "Top up a tenant's credits",
      description:
        'Adds a `top_up` ledger row of `amount` credits and answers it with the new balance. Without an `Idempotency-Key` each request ' +
        'is a new top-up; send one to make a retry safe.',
      ownIdempotencyKey:
        "Makes a retry safe: a top-up of the same tenant with the same key is not added again; the answer names the first top-up's " +
        'row (and the balance now). The same key with another amount: 409 `reference_conflict`. Keys are kept for good (they are the ' +
        "row's ledger reference, `top_up:key:<key>`).",
      operationId: 'topUpTenantCredits',
      params: TenantParam,
      body: TopUp,
      responses: { 201: { description: 'Topped up', schema: TopUpResult } },
      errors: {
        404: 'No such tenant (`not_found`)',
        409: 'This Idempotency-Key was used for a top-up of another amount (`reference_conflict`)',
        503: 'The wallet is busy with concurrent changes (`wallet_busy`), or billing is down (`service_unavailable`); retry after `Retry-After`',
        504: 'Billing did not answer in time (`upstream_timeout`); the top-up may have happened',
      },
      handler: async ({ params, body }, { requestId, idempotencyKey }) => {
        // The gateway's own tenant store decides 404: billing never sees an id the platform does not know.
        await op.assertTenant(params.tenantId);
        // Operators act live (billing refuses a call without a key mode); there is no key to name.
        const call = { requestId, tenantId: params.tenantId, keyMode: 'live' as const };
        const res = await clients.billing.topUp(topUpRequest(body, idempotencyKey), call);
        return {
          status: 201,
          body: { balance: balanceJson(res.balance).balance, transaction: transactionJson(res.transaction) },
        };
      },
    }),
  ];
}
