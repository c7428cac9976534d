import type { AddressInfo } from 'node:net';
import express from 'express';
import { requireAdmin } from './middleware';

// Guessing the operator token: after N wrong tokens per client address per window, 429 for all.

const TOKEN = 'operator-token-0123456789';

describe('operator token throttle', () => {
  let url: string;
  let close: () => Promise<void>;
  let clock = 1_000_000;

  beforeAll(async () => {
    const app = express();
    app.use(requireAdmin(TOKEN, { maxFailures: 3, windowMs: 60_000, now: () => clock }));
    app.get('/x', (_req, res) => void res.json({ ok: true }));
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/x`;
    close = () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      });
  });
  afterAll(() => close());

  const call = async (token?: string) => {
    const res = await fetch(url, { headers: token === undefined ? {} : { authorization: `Bearer ${token}` } });
    return {
      status: res.status,
      retryAfter: res.headers.get('retry-after'),
      reason: ((await res.json()) as { reasonCode?: string }).reasonCode,
    };
  };

  it('answers 429 rate_limited with Retry-After after N wrong tokens, even to the right one, until the window ends', async () => {
    // Requests without any token are answered 401 but are not guesses.
    for (let i = 0; i < 5; i++) expect((await call()).status).toBe(401);
    expect((await call(TOKEN)).status).toBe(200);
    for (let i = 0; i < 3; i++) expect(await call(`wrong-${i}`)).toMatchObject({ status: 401, reason: 'unauthorized' });
    expect(await call('wrong-again')).toEqual({ status: 429, retryAfter: '60', reason: 'rate_limited' });
    clock += 45_000;
    expect(await call(TOKEN)).toEqual({ status: 429, retryAfter: '15', reason: 'rate_limited' });
    clock += 15_000;
    expect((await call(TOKEN)).status).toBe(200);
    // A fresh window: failures count from zero again.
    expect((await call('wrong')).status).toBe(401);
    expect((await call(TOKEN)).status).toBe(200);
  });
});
