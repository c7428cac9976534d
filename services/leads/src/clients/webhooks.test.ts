import { contextOf, requireTenant } from '@voiceapi/kit/grpc';
import { webhookReaders } from './webhooks';

describe("leads' webhooks client", () => {
  const scope = (tenantId: string) => requireTenant({ tenantId, keyMode: 'live' });

  it('asks once per tenant, as the tenant, without waiting for webhooks to be up; moves asked at once share the question', async () => {
    const asked: unknown[] = [];
    const readers = webhookReaders(
      {
        listSubscribedTypes: async (req: unknown, ctx: { tenantId: string }, opts: unknown) => {
          asked.push([req, ctx, opts]);
          return {
            types:
              ctx.tenantId === 'reads' ? ['call.outbound.billed', 'contact.status_changed'] : ['call.outbound.billed'],
          };
        },
      } as never,
      60_000,
    );
    expect(await Promise.all([readers.wanted(scope('reads')), readers.wanted(scope('reads'))])).toEqual([true, true]);
    expect(await readers.wanted(scope('billed-only'))).toBe(false);
    expect(await readers.wanted(scope('billed-only'))).toBe(false);
    expect(asked).toEqual([
      [{}, contextOf(scope('reads')), { timeoutMs: 500, waitForReady: false }],
      [{}, contextOf(scope('billed-only')), { timeoutMs: 500, waitForReady: false }],
    ]);
  });

  it('announces while webhooks cannot answer, and asks again once the answer is older than the cache time', async () => {
    let up = false;
    let asks = 0;
    const readers = webhookReaders(
      {
        listSubscribedTypes: async () => {
          asks++;
          if (!up) throw Object.assign(new Error('unavailable'), { code: 14 });
          return { types: [] };
        },
      },
      50,
    );
    expect(await readers.wanted(scope('t'))).toBe(true);
    up = true;
    await new Promise((r) => setTimeout(r, 80));
    expect(await readers.wanted(scope('t'))).toBe(false);
    expect(asks).toBe(2);
  });

  it('with a cache time of 0, asks every time', async () => {
    let asks = 0;
    const readers = webhookReaders(
      { listSubscribedTypes: async () => (asks++, { types: ['contact.status_changed'] }) },
      0,
    );
    await readers.wanted(scope('t'));
    await readers.wanted(scope('t'));
    expect(asks).toBe(2);
  });
});
