import { defineRoute } from './route';
import { gate, json, MemoryIdempotency, serve, testKey, type Served } from './route-test-kit';
import { z } from './zod';

// The Idempotency-Key protocol of the route layer (decision 0007), against in-memory records with
// the real store's semantics; the store itself has its own integration test.

describe('Idempotency-Key on POST', () => {
  let s: Served;
  let records: MemoryIdempotency;
  let runs = 0;
  let hold: ReturnType<typeof gate> | undefined;
  let entered: ReturnType<typeof gate> | undefined;
  let failNext = false;

  const routes = [
    defineRoute({
      method: 'post',
      path: '/orders',
      tag: 'Orders',
      summary: 'Create an order',
      body: z.object({ item: z.string() }),
      responses: {
        201: { description: 'Created', schema: z.object({ order: z.object({ id: z.string(), item: z.string() }) }) },
      },
      handler: async ({ body }) => {
        runs++;
        entered?.open();
        if (hold) await hold.promise;
        if (failNext) {
          failNext = false;
          throw new Error('lost the connection to the service');
        }
        return { status: 201, body: { order: { id: `o${runs}`, item: body.item } } };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/orders',
      tag: 'Orders',
      summary: 'List',
      responses: { 200: { description: 'Runs', schema: z.object({ runs: z.number() }) } },
      handler: async () => ({ status: 200, body: { runs } }),
    }),
  ];

  beforeEach(async () => {
    records = new MemoryIdempotency();
    runs = 0;
    hold = entered = undefined;
    s = await serve(routes, {
      idempotency: records,
      keys: { default: testKey(), other: testKey({ tenantId: 'tenant-2' }), sandbox: testKey({ mode: 'sandbox' }) },
    });
  });
  afterEach(() => s.close());

  const order = (item: string, key?: string, as = 'default') =>
    fetch(`${s.url}/orders`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-test-key': as,
        ...(key !== undefined && { 'idempotency-key': key }),
      },
      body: JSON.stringify({ item }),
    }).then(json);

  it('runs the first request and replays its answer for the same key and body', async () => {
    const first = await order('tea', 'k1');
    const second = await order('tea', 'k1');
    expect(first).toMatchObject({ status: 201, body: { order: { id: 'o1', item: 'tea' } } });
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    expect(second.status).toBe(201);
    expect(second.body).toEqual(first.body);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(runs).toBe(1);
  });

  it('treats the same body with keys in another order as the same request', async () => {
    await order('tea', 'k-order');
    const again = await fetch(`${s.url}/orders`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': 'k-order' },
      body: '{ "item" : "tea" }',
    });
    expect(again.headers.get('idempotent-replayed')).toBe('true');
  });

  it('answers 422 idempotency_key_reused for the same key with another body, without running', async () => {
    await order('tea', 'k2');
    expect(await order('coffee', 'k2')).toMatchObject({ status: 422, body: { reasonCode: 'idempotency_key_reused' } });
    expect(runs).toBe(1);
  });

  it('answers exactly one 409 idempotency_in_progress while the first request runs, then replays the first answer', async () => {
    hold = gate();
    entered = gate();
    const first = order('tea', 'k3');
    await entered.promise; // the first request holds the key and is inside its handler
    const during = await order('tea', 'k3');
    expect(during).toMatchObject({ status: 409, body: { reasonCode: 'idempotency_in_progress' } });
    hold.open();
    const done = await first;
    expect(done).toMatchObject({ status: 201, body: { order: { id: 'o1' } } });
    const after = await order('tea', 'k3');
    expect(after.headers.get('idempotent-replayed')).toBe('true');
    expect(after.body).toEqual(done.body);
    expect(runs).toBe(1);
  });

  it('frees the key after our own failure (5xx), so a retry runs again', async () => {
    failNext = true;
    expect((await order('tea', 'k4')).status).toBe(500);
    const retry = await order('tea', 'k4');
    expect(retry).toMatchObject({ status: 201, body: { order: { id: 'o2' } } });
    expect(retry.headers.get('idempotent-replayed')).toBeNull();
  });

  it('still gives the caller its answer when recording it fails', async () => {
    records.failComplete = true;
    expect(await order('tea', 'k5')).toMatchObject({ status: 201, body: { order: { item: 'tea' } } });
    expect(s.logs).toContainEqual(
      expect.objectContaining({ level: 'warn', msg: 'could not record the idempotent answer' }),
    );
  });

  it('keeps keys apart per tenant and per key mode', async () => {
    await order('tea', 'shared');
    const otherTenant = await order('tea', 'shared', 'other');
    const sandbox = await order('tea', 'shared', 'sandbox');
    expect([otherTenant.headers.get('idempotent-replayed'), sandbox.headers.get('idempotent-replayed')]).toEqual([
      null,
      null,
    ]);
    expect(runs).toBe(3);
  });

  it('refuses a key that is too long or not visible ASCII with 400, before running', async () => {
    expect(await order('tea', 'k'.repeat(256))).toMatchObject({
      status: 400,
      body: { reasonCode: 'validation_error', details: [{ path: 'header.Idempotency-Key' }] },
    });
    expect(await order('tea', 'schlüssel')).toMatchObject({ status: 400 });
    expect(runs).toBe(0);
  });

  it('runs every request without the header', async () => {
    await order('tea');
    await order('tea');
    expect(runs).toBe(2);
  });
});
