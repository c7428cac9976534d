// Over 300 lines because the cases of one module share its fixtures.
import { defineReasons, fromGrpcError, grpcStatus, toGrpcError } from '@voiceapi/kit/errors';
import { type CallContext } from '@voiceapi/kit/grpc';
import { voiceapi } from '@voiceapi/proto';
import type { BillingClient, ServiceClients } from '../../clients';
import { json, serve, testKey, type Served } from '../../http/route-test-kit';
import { OperatorUseCases } from '../../operator/operator';
import type { TenantStore } from '../../store/tenants';
import { creditRoutes, creditTopUpRoutes } from '.';
import { MAX_TOP_UP } from './schemas';

// The credits routes through the real route layer (answers checked against their documentation),
// with a fake billing service at the gRPC-client boundary and the gateway's tenant store faked.

const { TransactionType } = voiceapi.billing.v1;
const billingReasons = defineReasons('billing.voiceapi', {
  insufficient_credits: grpcStatus.FAILED_PRECONDITION,
  reference_conflict: grpcStatus.ALREADY_EXISTS,
  sandbox_not_billable: grpcStatus.FAILED_PRECONDITION,
  wallet_busy: grpcStatus.ABORTED,
});
// What the client hands the gateway when billing raised a reason: it crossed the wire.
const viaGrpc = (err: unknown) => fromGrpcError(toGrpcError(err));

const TENANT = '665f1c2b9d3e4a0012345678';
const UNKNOWN_TENANT = '665f1c2b9d3e4a00123456ff';
const updated = new Date('2026-11-22T09:30:00.000Z');

const row = (over: Partial<voiceapi.billing.v1.Transaction> = {}): voiceapi.billing.v1.Transaction => ({
  id: 'tx-1',
  type: TransactionType.TRANSACTION_TYPE_TOP_UP,
  amount: 1000,
  balanceAfter: 1000,
  reference: 'top_up:x',
  description: 'Top-up',
  createTime: updated,
  ...over,
});
const balance = (over: Partial<voiceapi.billing.v1.Balance> = {}): voiceapi.billing.v1.Balance => ({
  balance: 996,
  available: 976,
  held: 20,
  seq: 4,
  updateTime: updated,
  ...over,
});

/** The billing client's three methods the gateway uses, answering what each test sets. */
function fakeBilling() {
  const calls: { method: string; request: any; ctx: CallContext }[] = [];
  const answers = {
    getBalance: async (): Promise<voiceapi.billing.v1.GetBalanceResponse> => ({ balance: balance() }),
    listTransactions: async (): Promise<voiceapi.billing.v1.ListTransactionsResponse> => ({
      transactions: [],
      page: { page: 1, limit: 25, total: 0, hasMore: false },
    }),
    topUp: async (req: voiceapi.billing.v1.TopUpRequest): Promise<voiceapi.billing.v1.TopUpResponse> => ({
      transaction: row({
        amount: req.amount,
        balanceAfter: 1000 + req.amount,
        reference: req.reference,
        description: req.note ?? 'Top-up',
      }),
      balance: balance({ balance: 1000 + req.amount }),
    }),
  };
  const record = (method: keyof typeof answers) => (request: any, ctx: CallContext) => {
    calls.push({ method, request, ctx });
    return (answers[method] as (r: unknown) => Promise<unknown>)(request);
  };
  const client = {
    getBalance: record('getBalance'),
    listTransactions: record('listTransactions'),
    topUp: record('topUp'),
  } as unknown as BillingClient;
  return { client, calls, answers };
}

let billing: ReturnType<typeof fakeBilling>;
beforeEach(() => {
  billing = fakeBilling();
});
// The routes are built once; each test's fake is reached through this indirection.
const clients = {
  get billing() {
    return billing.client;
  },
} as unknown as ServiceClients;

describe('GET /credits and GET /credits/transactions', () => {
  let s: Served;
  beforeAll(async () => {
    s = await serve(creditRoutes(clients), {
      checkResponses: true,
      keys: {
        default: testKey({ scopes: new Set(['credits:read']) }),
        sandbox: testKey({ keyId: 'key-2', mode: 'sandbox', scopes: new Set(['credits:read']) }),
        companies: testKey({ scopes: new Set(['companies:read', 'companies:write']) }),
      },
    });
  });
  afterAll(() => s.close());

  const get = (path: string, key = 'default') =>
    fetch(`${s.url}${path}`, { headers: { 'x-test-key': key } }).then(json);

  it('answers the wallet as integers and an ISO updatedAt, for the caller’s tenant and key mode', async () => {
    const res = await get('/credits');
    expect(res).toMatchObject({ status: 200 });
    expect(res.body).toEqual({ balance: 996, available: 976, held: 20, updatedAt: '2026-11-22T09:30:00.000Z' });
    expect(billing.calls).toEqual([
      {
        method: 'getBalance',
        request: {},
        ctx: expect.objectContaining({ tenantId: 'tenant-1', keyId: 'key-1', keyMode: 'live' }),
      },
    ]);
    await get('/credits', 'sandbox');
    expect(billing.calls[1]!.ctx).toMatchObject({ tenantId: 'tenant-1', keyId: 'key-2', keyMode: 'sandbox' });
  });

  it('answers updatedAt null for a wallet that never changed', async () => {
    billing.answers.getBalance = async () => ({ balance: { balance: 0, available: 0, held: 0, seq: 0 } });
    expect((await get('/credits')).body).toEqual({ balance: 0, available: 0, held: 0, updatedAt: null });
  });

  it.each(['/credits', '/credits/transactions'])(
    '%s: 403 naming credits:read for a key without it, before billing is asked',
    async (path) => {
      const res = await get(path, 'companies');
      expect(res).toMatchObject({ status: 403, body: { reasonCode: 'forbidden', missing: ['credits:read'] } });
      expect(billing.calls).toEqual([]);
    },
  );

  it('lists rows newest first as billing orders them, in the documented shape, with pagination', async () => {
    billing.answers.listTransactions = async () => ({
      transactions: [
        row({
          id: 'tx-3',
          type: TransactionType.TRANSACTION_TYPE_CALL_DEDUCTION,
          amount: -4,
          balanceAfter: 996,
          callId: 'call-9',
          reference: 'call:call-9',
          description: 'Outbound call',
        }),
        row({
          id: 'tx-2',
          type: TransactionType.TRANSACTION_TYPE_ADJUSTMENT,
          amount: 0,
          balanceAfter: 1000,
          reference: 'adj:1',
          description: 'Correction',
        }),
        row({ id: 'tx-1' }),
      ],
      page: { page: 2, limit: 3, total: 7, hasMore: true },
    });
    const res = await get('/credits/transactions?page=2&limit=3');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      transactions: [
        {
          id: 'tx-3',
          type: 'call_deduction',
          amount: -4,
          balanceAfter: 996,
          callId: 'call-9',
          reference: 'call:call-9',
          description: 'Outbound call',
          createdAt: '2026-11-22T09:30:00.000Z',
        },
        {
          id: 'tx-2',
          type: 'adjustment',
          amount: 0,
          balanceAfter: 1000,
          callId: null,
          reference: 'adj:1',
          description: 'Correction',
          createdAt: '2026-11-22T09:30:00.000Z',
        },
        {
          id: 'tx-1',
          type: 'top_up',
          amount: 1000,
          balanceAfter: 1000,
          callId: null,
          reference: 'top_up:x',
          description: 'Top-up',
          createdAt: '2026-11-22T09:30:00.000Z',
        },
      ],
      pagination: { page: 2, limit: 3, total: 7, totalPages: 3, hasMore: true },
    });
    expect(billing.calls[0]!.request).toEqual({
      page: { page: 2, limit: 3 },
      type: TransactionType.TRANSACTION_TYPE_UNSPECIFIED,
    });
  });

  it('asks for page 1 of 25 rows of every type by default', async () => {
    expect(await get('/credits/transactions')).toMatchObject({
      status: 200,
      body: { transactions: [], pagination: { page: 1, limit: 25, total: 0, totalPages: 0, hasMore: false } },
    });
    expect(billing.calls[0]!.request).toEqual({
      page: { page: 1, limit: 25 },
      type: TransactionType.TRANSACTION_TYPE_UNSPECIFIED,
    });
  });

  it.each([
    ['top_up', TransactionType.TRANSACTION_TYPE_TOP_UP],
    ['call_deduction', TransactionType.TRANSACTION_TYPE_CALL_DEDUCTION],
    ['number_purchase', TransactionType.TRANSACTION_TYPE_NUMBER_PURCHASE],
    ['knowledge_upload', TransactionType.TRANSACTION_TYPE_KNOWLEDGE_UPLOAD],
    ['adjustment', TransactionType.TRANSACTION_TYPE_ADJUSTMENT],
  ])('filters type=%s as its proto value', async (type, proto) => {
    expect((await get(`/credits/transactions?type=${type}`)).status).toBe(200);
    expect(billing.calls[0]!.request.type).toBe(proto);
  });

  it.each([
    ['an unknown name', 'type=refund'],
    ['another case', 'type=TOP_UP'],
    ['the proto name', 'type=TRANSACTION_TYPE_TOP_UP'],
    ['the proto number', 'type=1'],
    ['an empty value', 'type='],
    ['surrounding white space', 'type=%20top_up'],
    ['two values (an array)', 'type=top_up&type=adjustment'],
    ['a JSON object', `type=${encodeURIComponent('{"$ne":"top_up"}')}`],
    ['an operator', 'type=$ne'],
  ])('refuses %s for type with 400 validation_error, before billing is asked', async (_what, qs) => {
    const res = await get(`/credits/transactions?${qs}`);
    expect(res).toMatchObject({
      status: 400,
      body: { reasonCode: 'validation_error', details: [expect.objectContaining({ path: 'query.type' })] },
    });
    expect(billing.calls).toEqual([]);
  });

  it.each([
    ['bracket syntax, never an operator on type', 'type[$ne]=top_up', 'query.type[$ne]'],
    ['an array parameter', 'page[]=1', 'query.page[]'],
    ['a parameter the endpoint does not define', 'sort=amount', 'query.sort'],
  ])('refuses %s with 400 validation_error naming it, before billing is asked', async (_what, qs, path) => {
    const res = await get(`/credits/transactions?${qs}`);
    expect(res).toMatchObject({
      status: 400,
      body: { reasonCode: 'validation_error', details: [{ path, message: 'is not a parameter of this endpoint' }] },
    });
    expect(billing.calls).toEqual([]);
  });

  it.each([
    ['page=0', 'query.page'],
    ['page=-1', 'query.page'],
    ['page=100001', 'query.page'],
    ['page=1.5', 'query.page'],
    ['page=1e2', 'query.page'],
    ['page=&limit=5', 'query.page'],
    ['limit=0', 'query.limit'],
    ['limit=101', 'query.limit'],
    ['limit=+5', 'query.limit'],
    ['limit=0x10', 'query.limit'],
    ['limit=ten', 'query.limit'],
    ['limit=5&limit=6', 'query.limit'],
  ])('refuses %s with 400 naming %s', async (qs, path) => {
    const res = await get(`/credits/transactions?${qs}`);
    expect(res).toMatchObject({
      status: 400,
      body: { reasonCode: 'validation_error', details: [expect.objectContaining({ path })] },
    });
    expect(billing.calls).toEqual([]);
  });

  it('takes the largest page and limit', async () => {
    expect((await get('/credits/transactions?page=100000&limit=100')).status).toBe(200);
    expect(billing.calls[0]!.request.page).toEqual({ page: 100000, limit: 100 });
  });

  it('answers a row of a type the API does not name as a logged 500, not a guess', async () => {
    billing.answers.listTransactions = async () => ({
      transactions: [row({ type: TransactionType.TRANSACTION_TYPE_UNSPECIFIED })],
      page: { page: 1, limit: 25, total: 1, hasMore: false },
    });
    expect(await get('/credits/transactions')).toMatchObject({
      status: 500,
      body: { reasonCode: 'internal_error', error: 'internal error' },
    });
    expect(s.logs.some((l) => l.level === 'error')).toBe(true);
  });

  it('answers 503 with Retry-After when billing is down', async () => {
    billing.answers.getBalance = async () => {
      throw fromGrpcError({ code: grpcStatus.UNAVAILABLE, details: 'connect ECONNREFUSED' });
    };
    const res = await get('/credits');
    expect(res).toMatchObject({ status: 503, body: { reasonCode: 'service_unavailable' } });
    expect(res.headers.get('retry-after')).toBe('1');
  });
});

describe('POST /admin/v1/tenants/{tenantId}/credits', () => {
  let s: Served;
  beforeAll(async () => {
    const tenants = { exists: async (id: string) => id === TENANT } as TenantStore;
    const op = new OperatorUseCases(tenants, {} as never, {} as never, {} as never, 'pepper');
    s = await serve(creditTopUpRoutes(clients, op), { surface: 'admin', checkResponses: true });
  });
  afterAll(() => s.close());

  const topUp = (body: string, tenant = TENANT) =>
    fetch(`${s.url}/tenants/${tenant}/credits`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    }).then(json);

  it('answers 201 with the new balance and the top_up row', async () => {
    const res = await topUp('{"amount":250,"note":"Invoice 2026-117"}');
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      balance: 1250,
      transaction: {
        id: 'tx-1',
        type: 'top_up',
        amount: 250,
        balanceAfter: 1250,
        callId: null,
        reference: expect.stringMatching(
          /^top_up:[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
        ),
        description: 'Invoice 2026-117',
        createdAt: '2026-11-22T09:30:00.000Z',
      },
    });
  });

  it('calls billing live for the tenant in the path, a fresh reference per request, the note trimmed', async () => {
    await topUp('{"amount":5,"note":"  paid by wire \\u00a0"}');
    await topUp('{"amount":5}');
    const [first, second] = billing.calls;
    expect(first).toEqual({
      method: 'topUp',
      request: { amount: 5, note: 'paid by wire', reference: expect.stringMatching(/^top_up:/) },
      ctx: { requestId: expect.any(String), tenantId: TENANT, keyMode: 'live' },
    });
    expect(second!.request).toEqual({ amount: 5, reference: expect.stringMatching(/^top_up:/) });
    expect(second!.request.reference).not.toBe(first!.request.reference);
  });

  it('answers 404 for a tenant the gateway does not know, without calling billing', async () => {
    expect(await topUp('{"amount":5}', UNKNOWN_TENANT)).toMatchObject({
      status: 404,
      body: { reasonCode: 'not_found', error: 'tenant not found' },
    });
    expect(await topUp('{"amount":5}', 'not-an-id')).toMatchObject({
      status: 400,
      body: { details: [expect.objectContaining({ path: 'path.tenantId' })] },
    });
    expect(billing.calls).toEqual([]);
  });

  it('takes the bounds: 1 and 1,000,000,000 credits, a note of 500 characters', async () => {
    expect((await topUp('{"amount":1}')).status).toBe(201);
    expect((await topUp(`{"amount":${MAX_TOP_UP},"note":"${'n'.repeat(500)}"}`)).status).toBe(201);
    expect(billing.calls.map((c) => c.request.amount)).toEqual([1, 1_000_000_000]);
  });

  it.each([
    ['zero', '0'],
    ['negative', '-5'],
    ['fractional', '2.5'],
    ['a numeric string', '"100"'],
    ['null', 'null'],
    ['true', 'true'],
    ['an operator object', '{"$gt":0}'],
    ['an array', '[100]'],
    ['one over the maximum', '1000000001'],
    ['absurdly large', '1e20'],
    ['beyond float range', '1e400'],
    ['beyond the safe integers', '9007199254740993'],
  ])('refuses an amount that is %s with 400 naming body.amount', async (_what, amount) => {
    const res = await topUp(`{"amount":${amount}}`);
    expect(res).toMatchObject({
      status: 400,
      body: {
        reasonCode: 'validation_error',
        details: expect.arrayContaining([expect.objectContaining({ path: 'body.amount' })]),
      },
    });
    expect(res.body.details.every((d: { path: string }) => d.path === 'body.amount')).toBe(true);
    expect(billing.calls).toEqual([]);
  });

  it.each([
    ['no amount', '{"note":"x"}', 'body.amount'],
    ['a note over 500 characters', `{"amount":5,"note":"${'n'.repeat(501)}"}`, 'body.note'],
    ['a note with a control character', '{"amount":5,"note":"bell\\u0007"}', 'body.note'],
    ['a note with a line break', '{"amount":5,"note":"a\\nb"}', 'body.note'],
    ['a blank note', '{"amount":5,"note":"   "}', 'body.note'],
    ['a note that is not a string', '{"amount":5,"note":{"$ne":null}}', 'body.note'],
    ['an unknown field', '{"amount":5,"reference":"top_up:mine"}', 'body'],
    ['a body that is not an object', '[{"amount":5}]', 'body'],
  ])('refuses %s with 400 naming %s', async (_what, body, path) => {
    const res = await topUp(body);
    expect(res).toMatchObject({
      status: 400,
      body: { reasonCode: 'validation_error', details: [expect.objectContaining({ path })] },
    });
    expect(billing.calls).toEqual([]);
  });

  it.each([
    ['insufficient_credits', 402, null],
    ['reference_conflict', 409, null],
    ['sandbox_not_billable', 409, null],
    ['wallet_busy', 503, '1'],
  ] as const)("answers billing's %s with %i (Retry-After %s)", async (reason, status, retryAfter) => {
    billing.answers.topUp = async () => {
      throw viaGrpc(billingReasons.error(reason, `billing says ${reason}`));
    };
    const res = await topUp('{"amount":5}');
    expect(res).toMatchObject({ status, body: { reasonCode: reason, error: `billing says ${reason}` } });
    expect(res.headers.get('retry-after')).toBe(retryAfter);
  });
});
