// Over 300 lines because its cases share one started system (a few seconds to start per file); split by area only where that cost pays.
import { ADMIN_TOKEN, call, startSystem, tenantWithKey, type System } from '../harness/system';

// The credit wallet through the real gateway and the real billing service: GET /credits,
// GET /credits/transactions and the operator's POST /admin/v1/tenants/{tenantId}/credits
// (../shared/guide/api-decisions.md "Credits", "Billing semantics"; operator-api.md).
describe('credits through the gateway and billing', () => {
  let sys: System;
  let gw: string;
  // Generous limits: rate limiting has its own suite, this one sends bursts on purpose.
  const fresh = () => tenantWithKey(gw, { scopes: ['credits:read'], rateLimitPerSecond: 10_000 });

  beforeAll(async () => {
    sys = await startSystem();
    gw = sys.gateways[0]!.url;
  });
  afterAll(() => sys.stop());

  const topUp = (tenantId: string, body: unknown) =>
    call(`${gw}/admin/v1/tenants/${tenantId}/credits`, { admin: true, body });
  const wallet = (key: string) => call(`${gw}/api/v1/credits`, { key });
  const ledger = (key: string, qs = '') => call(`${gw}/api/v1/credits/transactions${qs}`, { key });

  interface Row {
    id: string;
    type: string;
    amount: number;
    balanceAfter: number;
    callId: string | null;
    reference: string;
    description: string;
    createdAt: string;
  }
  const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

  /** Rows newest first: each row's balanceAfter is the older row's plus its own amount, from 0. */
  function expectChain(newestFirst: Row[]) {
    const oldestFirst = [...newestFirst].reverse();
    let balance = 0;
    const breaks: string[] = [];
    for (const r of oldestFirst) {
      if (r.balanceAfter !== balance + r.amount) breaks.push(`${r.id}: ${balance} + ${r.amount} ≠ ${r.balanceAfter}`);
      balance = r.balanceAfter;
    }
    expect(breaks).toEqual([]);
    // Newest first means createdAt never increases down the list.
    const times = newestFirst.map((r) => Date.parse(r.createdAt));
    expect(times).toEqual([...times].sort((a, b) => b - a));
    return balance;
  }

  it('answers a new tenant an empty wallet (updatedAt null) and an empty ledger', async () => {
    const t = await fresh();
    const w = await wallet(t.key);
    expect(w.status).toBe(200);
    expect(w.body).toEqual({ balance: 0, available: 0, held: 0, updatedAt: null });
    const l = await ledger(t.key);
    expect(l.status).toBe(200);
    expect(l.body).toEqual({
      transactions: [],
      pagination: { page: 1, limit: 25, total: 0, totalPages: 0, hasMore: false },
    });
    const typed = await ledger(t.key, '?type=top_up&page=3&limit=10');
    expect(typed.body).toEqual({
      transactions: [],
      pagination: { page: 3, limit: 10, total: 0, totalPages: 0, hasMore: false },
    });
  });

  it('tops up 1000 with a note: 201 with the top_up row; the wallet and the ledger show it', async () => {
    const t = await fresh();
    const before = Date.now();
    const res = await topUp(t.tenantId, { amount: 1000, note: 'Invoice 2026-117' });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      balance: 1000,
      transaction: {
        id: expect.any(String),
        type: 'top_up',
        amount: 1000,
        balanceAfter: 1000,
        callId: null,
        reference: expect.stringMatching(/^top_up:[0-9a-f-]{36}$/),
        description: 'Invoice 2026-117',
        createdAt: expect.stringMatching(ISO),
      },
    });
    const createdAt = Date.parse(res.body.transaction.createdAt);
    expect(createdAt).toBeGreaterThanOrEqual(before - 5_000);
    expect(createdAt).toBeLessThanOrEqual(Date.now() + 5_000);

    const w = await wallet(t.key);
    expect(w.body).toEqual({ balance: 1000, available: 1000, held: 0, updatedAt: expect.stringMatching(ISO) });
    expect(Date.parse(w.body.updatedAt)).toBeGreaterThanOrEqual(createdAt);

    const l = await ledger(t.key);
    expect(l.body).toEqual({
      transactions: [res.body.transaction],
      pagination: { page: 1, limit: 25, total: 1, totalPages: 1, hasMore: false },
    });
  });

  it('trims the note, and gives a top-up without a note a description of its own', async () => {
    const t = await fresh();
    const trimmed = await topUp(t.tenantId, { amount: 5, note: '  paid by wire  ' });
    expect(trimmed.status).toBe(201);
    expect(trimmed.body.transaction.description).toBe('paid by wire');
    const bare = await topUp(t.tenantId, { amount: 7 });
    expect(bare.status).toBe(201);
    expect(bare.body.transaction).toMatchObject({
      type: 'top_up',
      amount: 7,
      balanceAfter: 12,
      description: expect.stringMatching(/\S/),
    });
    expect(bare.body.transaction.reference).not.toBe(trimmed.body.transaction.reference);
    expect(bare.body.transaction.id).not.toBe(trimmed.body.transaction.id);
  });

  it('lists several top-ups newest first, chained, summing to the balance; filters by type; pages', async () => {
    const t = await fresh();
    const amounts = [100, 250, 1, 4000, 37];
    const answers = [];
    for (const amount of amounts) {
      const res = await topUp(t.tenantId, { amount, note: `top-up of ${amount}` });
      expect(res.status).toBe(201);
      answers.push(res.body);
    }
    const sum = amounts.reduce((a, b) => a + b, 0);
    // Each answer's balance is its own row's balanceAfter, and they rise by each amount.
    expect(answers.map((a) => a.balance)).toEqual(answers.map((a) => a.transaction.balanceAfter));
    expect(answers.map((a) => a.balance)).toEqual([100, 350, 351, 4351, 4388]);

    expect((await wallet(t.key)).body).toMatchObject({ balance: sum, available: sum, held: 0 });

    const all = await ledger(t.key);
    expect(all.status).toBe(200);
    const rows: Row[] = all.body.transactions;
    expect(rows.map((r) => r.amount)).toEqual([...amounts].reverse());
    expect(rows.map((r) => r.description)).toEqual([...amounts].reverse().map((a) => `top-up of ${a}`));
    expect(rows).toEqual([...answers].reverse().map((a) => a.transaction));
    expect(expectChain(rows)).toBe(sum);
    expect(rows.reduce((s, r) => s + r.amount, 0)).toBe(sum);
    expect(all.body.pagination).toEqual({ page: 1, limit: 25, total: 5, totalPages: 1, hasMore: false });

    const topUps = await ledger(t.key, '?type=top_up');
    expect(topUps.body).toEqual(all.body);
    for (const other of ['call_deduction', 'number_purchase', 'knowledge_upload', 'adjustment']) {
      const none = await ledger(t.key, `?type=${other}`);
      expect({ other, status: none.status, body: none.body }).toEqual({
        other,
        status: 200,
        body: { transactions: [], pagination: { page: 1, limit: 25, total: 0, totalPages: 0, hasMore: false } },
      });
    }

    // One row a page: every row once, in the same order; hasMore until the last page.
    const paged: Row[] = [];
    for (let page = 1; page <= 5; page++) {
      const res = await ledger(t.key, `?limit=1&page=${page}`);
      expect(res.body.pagination).toEqual({ page, limit: 1, total: 5, totalPages: 5, hasMore: page < 5 });
      expect(res.body.transactions).toHaveLength(1);
      paged.push(res.body.transactions[0]);
    }
    expect(paged).toEqual(rows);
    const past = await ledger(t.key, '?limit=1&page=6');
    expect(past.body).toEqual({
      transactions: [],
      pagination: { page: 6, limit: 1, total: 5, totalPages: 5, hasMore: false },
    });
    const twoPerPage = await ledger(t.key, '?limit=2&page=3');
    expect(twoPerPage.body).toEqual({
      transactions: [rows[4]],
      pagination: { page: 3, limit: 2, total: 5, totalPages: 3, hasMore: false },
    });
    const typedPage = await ledger(t.key, '?type=top_up&limit=2&page=2');
    expect(typedPage.body).toEqual({
      transactions: rows.slice(2, 4),
      pagination: { page: 2, limit: 2, total: 5, totalPages: 3, hasMore: true },
    });
  });

  it('keeps balances beyond 32 bits exact (three top-ups of 1,000,000,000)', async () => {
    const t = await fresh();
    for (let i = 1; i <= 3; i++) {
      const res = await topUp(t.tenantId, { amount: 1_000_000_000 });
      expect(res.status).toBe(201);
      expect(res.body.balance).toBe(i * 1_000_000_000);
    }
    expect((await wallet(t.key)).body).toMatchObject({ balance: 3_000_000_000, available: 3_000_000_000, held: 0 });
    expect((await ledger(t.key)).body.transactions.map((r: Row) => r.balanceAfter)).toEqual([
      3_000_000_000, 2_000_000_000, 1_000_000_000,
    ]);
  });

  it("shows a tenant's sandbox and live keys one wallet, and another tenant none of it", async () => {
    const t = await fresh();
    const sandbox = await call(`${gw}/admin/v1/tenants/${t.tenantId}/api-keys`, {
      admin: true,
      body: { name: 'sandbox reader', mode: 'sandbox', scopes: ['credits:read'], rateLimitPerSecond: 10_000 },
    });
    expect(sandbox.status).toBe(201);
    expect(sandbox.body.key).toMatch(/^sk_sandbox_/);
    expect((await topUp(t.tenantId, { amount: 300 })).status).toBe(201);
    expect((await topUp(t.tenantId, { amount: 45 })).status).toBe(201);

    const live = { wallet: await wallet(t.key), ledger: await ledger(t.key) };
    const sb = { wallet: await wallet(sandbox.body.key), ledger: await ledger(sandbox.body.key) };
    expect(live.wallet.body).toMatchObject({ balance: 345, available: 345, held: 0 });
    expect(sb.wallet.status).toBe(200);
    expect(sb.wallet.body).toEqual(live.wallet.body);
    expect(sb.ledger.status).toBe(200);
    expect(sb.ledger.body).toEqual(live.ledger.body);
    expect(sb.ledger.body.pagination.total).toBe(2);

    const other = await fresh();
    expect((await wallet(other.key)).body).toEqual({ balance: 0, available: 0, held: 0, updatedAt: null });
    const otherLedger = await ledger(other.key);
    expect(otherLedger.body).toEqual({
      transactions: [],
      pagination: { page: 1, limit: 25, total: 0, totalPages: 0, hasMore: false },
    });
    // Its own top-up does not reach the first tenant either.
    expect((await topUp(other.tenantId, { amount: 9 })).status).toBe(201);
    expect((await wallet(other.key)).body.balance).toBe(9);
    expect((await wallet(t.key)).body.balance).toBe(345);
    const ids = new Set(live.ledger.body.transactions.map((r: Row) => r.id));
    expect((await ledger(other.key)).body.transactions.filter((r: Row) => ids.has(r.id))).toEqual([]);
  });

  it.each(['/api/v1/credits', '/api/v1/credits/transactions'])(
    '%s: 403 naming credits:read for a key without it; 401 without a key',
    async (path) => {
      const noScope = await tenantWithKey(gw, { scopes: ['companies:read'], rateLimitPerSecond: 10_000 });
      const forbidden = await call(`${gw}${path}`, { key: noScope.key });
      expect(forbidden.status).toBe(403);
      expect(forbidden.body).toEqual({ error: expect.any(String), reasonCode: 'forbidden', missing: ['credits:read'] });
      const anonymous = await call(`${gw}${path}`);
      expect(anonymous.status).toBe(401);
      expect(anonymous.body.reasonCode).toBe('unauthorized');
      // The operator token is no tenant key.
      const operator = await call(`${gw}${path}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
      expect(operator.status).toBe(401);
    },
  );

  it('makes a retried top-up with the same Idempotency-Key add nothing, and refuses the key for another amount', async () => {
    const t = await fresh();
    const send = (amount: number, key: string) =>
      call(`${gw}/admin/v1/tenants/${t.tenantId}/credits`, {
        admin: true,
        body: { amount },
        headers: { 'Idempotency-Key': key },
      });
    const first = await send(70, 'invoice-42');
    const again = await send(70, 'invoice-42');
    expect(first.status).toBe(201);
    expect(again.status).toBe(201);
    expect(again.body.transaction).toEqual(first.body.transaction);
    expect(first.body.transaction.reference).toBe('top_up:key:invoice-42');
    const conflict = await send(71, 'invoice-42');
    expect({ status: conflict.status, reason: conflict.body.reasonCode }).toEqual({
      status: 409,
      reason: 'reference_conflict',
    });
    const bad = await send(1, 'has space');
    expect({ status: bad.status, reason: bad.body.reasonCode }).toEqual({ status: 400, reason: 'validation_error' });
    expect((await wallet(t.key)).body.balance).toBe(70);
    expect((await ledger(t.key)).body.pagination.total).toBe(1);
  });

  it('keeps top-ups to the operator: no token or a tenant key is 401', async () => {
    const t = await fresh();
    expect((await call(`${gw}/admin/v1/tenants/${t.tenantId}/credits`, { body: { amount: 5 } })).status).toBe(401);
    const withKey = await call(`${gw}/admin/v1/tenants/${t.tenantId}/credits`, { key: t.key, body: { amount: 5 } });
    expect(withKey.status).toBe(401);
    expect(withKey.body.reasonCode).toBe('unauthorized');
    expect((await wallet(t.key)).body).toEqual({ balance: 0, available: 0, held: 0, updatedAt: null });
  });

  it('answers a top-up for an unknown tenant with 404 not_found, and a malformed tenant id with 400', async () => {
    const unknown = await topUp('0123456789abcdef01234567', { amount: 5 });
    expect(unknown.status).toBe(404);
    expect(unknown.body.reasonCode).toBe('not_found');
    const malformed = await topUp('not-a-tenant', { amount: 5 });
    expect(malformed.status).toBe(400);
    expect(malformed.body.reasonCode).toBe('validation_error');
  });

  it('refuses amounts that are not whole credits from 1 to 1,000,000,000 with 400, changing nothing', async () => {
    const t = await fresh();
    expect((await topUp(t.tenantId, { amount: 10 })).status).toBe(201);
    const before = { wallet: (await wallet(t.key)).body, ledger: (await ledger(t.key)).body };
    const bad: [string, string][] = [
      ['zero', '0'],
      ['negative', '-1'],
      ['fractional', '1.5'],
      ['a numeric string', '"10"'],
      ['null', 'null'],
      ['an operator object', '{"$gt":0}'],
      ['one over the maximum', '1000000001'],
      ['an array', '[10]'],
      ['true', 'true'],
      ['huge', '1e20'],
    ];
    for (const [what, amount] of bad) {
      const res = await call(`${gw}/admin/v1/tenants/${t.tenantId}/credits`, {
        admin: true,
        raw: `{"amount":${amount},"note":"bad"}`,
      });
      expect({
        what,
        status: res.status,
        reasonCode: res.body?.reasonCode,
        paths: [...new Set(res.body?.details?.map((d: { path: string }) => d.path))],
      }).toEqual({
        what,
        status: 400,
        reasonCode: 'validation_error',
        // Every detail names the amount (1e20 is both fractional-typed and too large: two details).
        paths: ['body.amount'],
      });
    }
    for (const [what, raw] of [
      ['no amount', '{"note":"x"}'],
      ['an unknown field', '{"amount":5,"reference":"top_up:mine"}'],
      ['malformed JSON', '{"amount": '],
      ['a note with a line break', '{"amount":5,"note":"a\\nb"}'],
    ]) {
      const res = await call(`${gw}/admin/v1/tenants/${t.tenantId}/credits`, { admin: true, raw });
      expect({ what, status: res.status, reasonCode: res.body?.reasonCode }).toEqual({
        what,
        status: 400,
        reasonCode: 'validation_error',
      });
    }
    expect((await wallet(t.key)).body).toEqual(before.wallet);
    expect((await ledger(t.key)).body).toEqual(before.ledger);

    const max = await topUp(t.tenantId, { amount: 1_000_000_000 });
    expect(max.status).toBe(201);
    expect(max.body).toMatchObject({
      balance: 1_000_000_010,
      transaction: { type: 'top_up', amount: 1_000_000_000, balanceAfter: 1_000_000_010 },
    });
    const one = await topUp(t.tenantId, { amount: 1 });
    expect(one.status).toBe(201);
    expect(one.body.balance).toBe(1_000_000_011);
    expect((await wallet(t.key)).body.balance).toBe(1_000_000_011);
  });

  it.each([
    ['an unknown type', 'type=refund'],
    ['another case', 'type=TOP_UP'],
    ['the proto name', 'type=TRANSACTION_TYPE_TOP_UP'],
    ['the proto number', 'type=1'],
    ['an empty value', 'type='],
    ['surrounding white space', 'type=%20top_up'],
    ['two values', 'type=top_up&type=adjustment'],
    ['a JSON object', `type=${encodeURIComponent('{"$ne":"top_up"}')}`],
    ['an operator', 'type=$ne'],
    ['page 0', 'page=0'],
    ['limit 101', 'limit=101'],
    ['limit not a number', 'limit=ten'],
  ])('refuses %s in the ledger query with 400 validation_error', async (_what, qs) => {
    const t = await fresh();
    const res = await ledger(t.key, `?${qs}`);
    expect(res.status).toBe(400);
    expect(res.body.reasonCode).toBe('validation_error');
    expect(res.body.details.length).toBeGreaterThan(0);
  });

  it('refuses bracket syntax (type[]=, type[$ne]=) and parameters it does not define with 400 naming them, never an operator', async () => {
    const t = await fresh();
    expect((await topUp(t.tenantId, { amount: 3 })).status).toBe(201);
    for (const [qs, name] of [
      ['type[]=top_up', 'type[]'],
      ['type[$ne]=top_up', 'type[$ne]'],
      ['sort=amount', 'sort'],
    ] as const) {
      const res = await ledger(t.key, `?${qs}`);
      expect({ qs, status: res.status, body: res.body }).toEqual({
        qs,
        status: 400,
        body: {
          error: expect.any(String),
          reasonCode: 'validation_error',
          details: [{ path: `query.${name}`, message: 'is not a parameter of this endpoint' }],
        },
      });
    }
  });

  it('adds 20 concurrent top-ups of 1..20 exactly once each: balance 210, an unbroken chain', async () => {
    const t = await fresh();
    const amounts = Array.from({ length: 20 }, (_, i) => i + 1);
    const results = await Promise.all(amounts.map((amount) => topUp(t.tenantId, { amount, note: `burst ${amount}` })));
    expect(results.map((r) => r.status)).toEqual(amounts.map(() => 201));
    // Each answer is consistent with its own row.
    for (const r of results) expect(r.body.balance).toBe(r.body.transaction.balanceAfter);
    expect(new Set(results.map((r) => r.body.transaction.balanceAfter)).size).toBe(20);
    expect(new Set(results.map((r) => r.body.transaction.reference)).size).toBe(20);

    expect((await wallet(t.key)).body).toMatchObject({ balance: 210, available: 210, held: 0 });
    const l = await ledger(t.key, '?limit=100');
    expect(l.body.pagination).toEqual({ page: 1, limit: 100, total: 20, totalPages: 1, hasMore: false });
    const rows: Row[] = l.body.transactions;
    expect(rows.map((r) => r.amount).sort((a, b) => a - b)).toEqual(amounts);
    expect(new Set(rows.map((r) => r.id)).size).toBe(20);
    expect(rows[0]!.balanceAfter).toBe(210);
    expect(expectChain(rows)).toBe(210);
    // The rows the answers named are the rows the ledger holds.
    const byId = new Map(rows.map((r) => [r.id, r]));
    for (const r of results) expect(byId.get(r.body.transaction.id)).toEqual(r.body.transaction);
  });
});
