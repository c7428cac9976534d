// Over 300 lines because the direct and the proxied client share the refusals, the loopback servers and the helpers.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { failureOf, OutboundClient, OutboundFailed, OutboundRefused } from './outbound';

// A real local server stands in for a tenant's API; loopback is refused unless allow-listed, so
// the suite allow-lists it where it must reach it and leaves it out where it must be refused.
type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void;

/** What `p` was rejected with, asserted to be a `kind`. */
async function rejectedWith<E extends Error>(p: Promise<unknown>, kind: new (...args: never[]) => E): Promise<E> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(kind);
  return err as E;
}

describe('outbound client', () => {
  let server: Server;
  let base: string;
  let handler: Handler = (_req, res) => res.end('{}');
  let loopback: OutboundClient;
  const strict = new OutboundClient();

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => handler(req, res, body));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    base = `http://127.0.0.1:${port}`;
    loopback = new OutboundClient({ allow: [`127.0.0.1:${port}`, `localhost:${port}`], maxResponseBytes: 64 * 1024 });
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    await loopback.close();
    await strict.close();
  });

  const refusal = (p: Promise<unknown>) => rejectedWith(p, OutboundRefused);
  const failure = (p: Promise<unknown>) => rejectedWith(p, OutboundFailed);

  it.each([
    ['http://169.254.169.254/latest/meta-data', 'address'],
    ['https://169.254.169.254/', 'address'],
    ['https://[::1]/', 'address'],
    ['https://[::ffff:127.0.0.1]/', 'address'],
    ['https://[::ffff:7f00:1]/', 'address'],
    ['https://10.0.0.8/', 'address'],
    ['https://192.168.1.1/', 'address'],
    ['https://100.64.0.1/', 'address'],
    ['https://0.0.0.0/', 'address'],
    ['https://[fd00::1]/', 'address'],
    ['https://[fe80::1]/', 'address'],
    ['https://[2002:7f00:1::]/', 'address'],
    ['https://[64:ff9b::7f00:1]/', 'address'],
    ['https://0x7f.1/', 'address'],
    ['file:///etc/passwd', 'scheme'],
    ['ftp://example.com/', 'scheme'],
    ['http://example.com/', 'scheme'],
    ['https://user:pass@example.com/', 'credentials'],
    ['not a url', 'malformed'],
  ])('refuses %s (%s) by its form, before sending anything', async (url, reason) => {
    expect(() => strict.checkUrl(url)).toThrow(OutboundRefused);
    expect((await refusal(strict.send(url, { timeoutMs: 1000 }))).reason).toBe(reason);
  });

  it('accepts public https addresses and names by their form (names are resolved when called)', () => {
    expect(strict.checkUrl('https://api.example.com/v1').hostname).toBe('api.example.com');
    expect(strict.checkUrl('https://93.184.215.14/').hostname).toBe('93.184.215.14');
    expect(strict.checkUrl('https://unresolvable.invalid/').hostname).toBe('unresolvable.invalid');
  });

  it('refuses a name that resolves to loopback when it is called', async () => {
    const port = (server.address() as AddressInfo).port;
    expect((await refusal(strict.send(`https://localhost:${port}/`, { timeoutMs: 2000 }))).reason).toBe('address');
  });

  it('fails an unresolvable name as unreachable, on the far side (the name does not exist)', async () => {
    const failed = await failure(strict.send('https://unresolvable.invalid/', { timeoutMs: 5000 }));
    expect([failed.reason, failed.side]).toEqual(['unreachable', 'far']);
  });

  it("says whose a failure was: near when this host could not send at all, far when the destination's", () => {
    const sideOf = (code: string) => {
      const f = failureOf(Object.assign(new Error(code), { code }), 1000) as OutboundFailed;
      return `${f.reason}/${f.side}`;
    };
    // Our resolver not answering, no route out, no sockets left: the sender's own.
    expect(['EAI_AGAIN', 'ENETUNREACH', 'EMFILE', 'EADDRNOTAVAIL'].map(sideOf)).toEqual([
      'unreachable/near',
      'unreachable/near',
      'network/near',
      'network/near',
    ]);
    // A name that does not exist, a host that refuses, resets or is unreachable: the destination's.
    expect(['ENOTFOUND', 'ECONNREFUSED', 'ECONNRESET', 'EHOSTUNREACH'].map(sideOf)).toEqual([
      'unreachable/far',
      'unreachable/far',
      'network/far',
      'unreachable/far',
    ]);
    // The cause's code counts (undici wraps the socket's error); a timeout is the destination's.
    const wrapped = failureOf(Object.assign(new Error('fetch failed'), { cause: { code: 'EAI_AGAIN' } }), 1000);
    expect((wrapped as OutboundFailed).side).toBe('near');
    const timedOut = failureOf(new DOMException('late', 'TimeoutError'), 300) as OutboundFailed;
    expect([timedOut.reason, timedOut.side]).toEqual(['timeout', 'far']);
  });

  it('reaches an allow-listed host over http, by address and by name, with method, headers and body', async () => {
    const seen: { method?: string; auth?: string; body: string }[] = [];
    handler = (req, res, body) => {
      seen.push({ method: req.method, auth: req.headers.authorization, body });
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ found: true }));
    };
    const port = (server.address() as AddressInfo).port;
    const r = await loopback.send(`${base}/crm/lookup`, {
      method: 'POST',
      headers: { authorization: 'Bearer s3cret', 'content-type': 'application/json' },
      body: '{"phone":"+14155550100"}',
      timeoutMs: 2000,
    });
    expect(r).toMatchObject({ status: 200, headers: { 'content-type': 'application/json' } });
    expect(JSON.parse(r.body.toString())).toEqual({ found: true });
    expect(seen).toEqual([{ method: 'POST', auth: 'Bearer s3cret', body: '{"phone":"+14155550100"}' }]);
    expect((await loopback.send(`http://localhost:${port}/doctors`, { timeoutMs: 2000 })).status).toBe(200);
  });

  it('allows only the listed host:port: another port of the same host, or plain http elsewhere, is refused', async () => {
    expect(() => loopback.checkUrl('http://93.184.215.14/')).toThrow(/http: is not allowed/);
    expect((await refusal(loopback.send('http://127.0.0.1:1/', { timeoutMs: 1000 }))).reason).toBe('address');
    expect((await refusal(loopback.send('https://127.0.0.2/', { timeoutMs: 1000 }))).reason).toBe('address');
  });

  it('follows a redirect that passes the checks, and refuses one to an internal address', async () => {
    handler = (req, res) => {
      if (req.url === '/moved') {
        res.writeHead(302, { location: '/here' });
        return res.end();
      }
      if (req.url === '/metadata') {
        res.writeHead(307, { location: 'http://169.254.169.254/latest/meta-data/' });
        return res.end();
      }
      if (req.url === '/loop') {
        res.writeHead(302, { location: '/loop' });
        return res.end();
      }
      res.end('here');
    };
    const moved = await loopback.send(`${base}/moved`, { timeoutMs: 2000 });
    expect({ status: moved.status, body: moved.body.toString(), url: moved.url }).toEqual({
      status: 200,
      body: 'here',
      url: `${base}/here`,
    });
    expect((await refusal(loopback.send(`${base}/metadata`, { timeoutMs: 2000 }))).reason).toBe('address');
    expect((await refusal(loopback.send(`${base}/loop`, { timeoutMs: 2000 }))).reason).toBe('redirects');
  });

  it('drops the bearer secret on a redirect to another origin', async () => {
    const auths: (string | undefined)[] = [];
    const other = createServer((req, res) => {
      auths.push(req.headers.authorization);
      res.end('ok');
    });
    await new Promise<void>((r) => other.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    const both = new OutboundClient({
      allow: [`127.0.0.1:${port}`, `localhost:${(other.address() as AddressInfo).port}`],
    });
    handler = (_req, res) => {
      res.writeHead(302, { location: `http://localhost:${(other.address() as AddressInfo).port}/` });
      res.end();
    };
    try {
      expect(
        (await both.send(`${base}/`, { headers: { authorization: 'Bearer s3cret' }, timeoutMs: 2000 })).status,
      ).toBe(200);
      expect(auths).toEqual([undefined]);
    } finally {
      await both.close();
      other.closeAllConnections();
      await new Promise((r) => other.close(r));
    }
  });

  it('caps the response size without holding it all', async () => {
    handler = (_req, res) => {
      const chunk = Buffer.alloc(64 * 1024, 'x');
      let sent = 0;
      const push = () => {
        while (sent < 10 * 1024 * 1024) {
          sent += chunk.length;
          if (!res.write(chunk)) return res.once('drain', push);
        }
        res.end();
      };
      push();
    };
    expect((await failure(loopback.send(`${base}/big`, { timeoutMs: 5000 }))).reason).toBe('too_large');
    // When only the status matters (webhook deliveries), the body is cut at the cap instead.
    const cut = await loopback.send(`${base}/big`, { timeoutMs: 5000, oversize: 'truncate' });
    expect({ status: cut.status, bytes: cut.body.length }).toEqual({ status: 200, bytes: 64 * 1024 });
  });

  it('answers a redirect as it is, without following it, when asked to', async () => {
    handler = (_req, res) => {
      res.writeHead(307, { location: 'http://127.0.0.1:1/internal' });
      res.end();
    };
    const answer = await loopback.send(`${base}/moved`, {
      method: 'POST',
      body: '{}',
      timeoutMs: 2000,
      redirects: 'return',
    });
    expect({ status: answer.status, location: answer.headers.location, url: answer.url }).toEqual({
      status: 307,
      location: 'http://127.0.0.1:1/internal',
      url: `${base}/moved`,
    });
  });

  it('gives up on a slow answer at the timeout, before headers and while the body trickles', async () => {
    handler = (req, res) => {
      if (req.url === '/trickle') {
        res.write('{');
        return;
      }
      // never answers
    };
    const t0 = Date.now();
    expect((await failure(loopback.send(`${base}/slow`, { timeoutMs: 300 }))).reason).toBe('timeout');
    expect((await failure(loopback.send(`${base}/trickle`, { timeoutMs: 300 }))).reason).toBe('timeout');
    expect(Date.now() - t0).toBeLessThan(5000);
  });

  it.each(['localhost', '127.0.0.0/8', 'http://x:1/', 'a:b'])(
    'refuses the allow-list entry %s at construction (host:port only)',
    (entry) => {
      expect(() => new OutboundClient({ allow: [entry] })).toThrow(/not host:port/);
    },
  );

  it('matches an allow-list entry as the URL parser writes the host (case, IPv6 brackets, default port)', () => {
    const c = new OutboundClient({ allow: ['LocalHost:80', '[::1]:9000'] });
    expect(c.checkUrl('http://localhost/').hostname).toBe('localhost');
    expect(c.checkUrl('http://[::1]:9000/x').hostname).toBe('[::1]');
    expect(() => c.checkUrl('http://[::1]:9001/')).toThrow(OutboundRefused);
  });
});

// A real HTTP CONNECT proxy on loopback, as platforms run one (Smokescreen): every exchange goes through it,
// tunnelled. What it answers decides whose a failure is: the proxy's own failures are ours (near), its 502/503/504
// (it could not reach the destination) the destination's.
describe('outbound client through an egress proxy', () => {
  let target: Server;
  let proxy: Server;
  let targetHost: string;
  let proxyUrl: string;
  /** How the proxy answers the next CONNECT: opens the tunnel, answers this status, closes, or never answers. */
  let answer: 'tunnel' | number | 'close' | 'silence' = 'tunnel';
  const connects: string[] = [];
  const received: { method?: string; url?: string; body: string }[] = [];
  const proxySockets = new Set<Socket>();
  const clients: OutboundClient[] = [];
  const through = (proxySetting = proxyUrl) => {
    const c = new OutboundClient({ allow: [targetHost], proxy: proxySetting });
    clients.push(c);
    return c;
  };
  const listen = async (s: Server) => {
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
    return (s.address() as AddressInfo).port;
  };
  const failure = (p: Promise<unknown>) => rejectedWith(p, OutboundFailed);

  beforeAll(async () => {
    target = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        received.push({ method: req.method, url: req.url, body });
        res.end('through');
      });
    });
    targetHost = `127.0.0.1:${await listen(target)}`;
    // Plain requests (a forward, not a tunnel) are refused, so only a CONNECT reaches the target.
    proxy = createServer((_req, res) => res.writeHead(405).end('CONNECT only'));
    proxy.on('connect', (req: IncomingMessage, client: Socket, head: Buffer) => {
      connects.push(req.url ?? '');
      proxySockets.add(client);
      client.on('error', () => undefined);
      if (typeof answer === 'number') return client.end(`HTTP/1.1 ${answer} Proxy Says So\r\n\r\n`);
      if (answer === 'close') return client.end();
      if (answer === 'silence') return;
      const [host, port] = (req.url ?? '').split(':');
      const upstream = connect(Number(port), host ?? '', () => {
        client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        upstream.write(head);
        upstream.pipe(client).pipe(upstream);
      });
      upstream.on('error', () => client.end('HTTP/1.1 502 Bad Gateway\r\n\r\n'));
      client.on('close', () => upstream.destroy());
    });
    proxyUrl = `http://127.0.0.1:${await listen(proxy)}`;
  });
  afterEach(async () => {
    // A silent proxy's CONNECTs are still open; ending them lets the clients close.
    for (const s of proxySockets) s.destroy();
    proxySockets.clear();
    await Promise.all(clients.splice(0).map((c) => c.close()));
    connects.length = 0;
    received.length = 0;
    answer = 'tunnel';
  });
  afterAll(async () => {
    target.closeAllConnections();
    await new Promise((r) => target.close(r));
    await new Promise((r) => proxy.close(r));
  });

  it('reaches an allow-listed host through a CONNECT tunnel, and the host sees the request as sent', async () => {
    const r = await through().send(`http://${targetHost}/hook`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"event":"call.outbound.billed"}',
      timeoutMs: 2000,
    });
    expect({ status: r.status, body: r.body.toString() }).toEqual({ status: 200, body: 'through' });
    expect(connects).toEqual([targetHost]);
    expect(received).toEqual([{ method: 'POST', url: '/hook', body: '{"event":"call.outbound.billed"}' }]);
  });

  it('checks as before: a public name is resolved and refused here, before any CONNECT', async () => {
    const port = targetHost.split(':')[1];
    const refused = await through()
      .send(`https://localhost:${port}/`, { timeoutMs: 2000 })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(OutboundRefused);
    expect((refused as OutboundRefused).reason).toBe('address');
    const missing = await failure(through().send('https://unresolvable.invalid/', { timeoutMs: 5000 }));
    expect([missing.reason, missing.side]).toEqual(['unreachable', 'far']);
    expect(() => through().checkUrl('http://127.0.0.1:1/')).toThrow(OutboundRefused);
    expect(connects).toEqual([]);
  });

  it('fails on our side when the proxy is down', async () => {
    const gone = createServer();
    const port = await listen(gone);
    await new Promise((r) => gone.close(r));
    const failed = await failure(
      through(`http://127.0.0.1:${port}`).send(`http://${targetHost}/`, { timeoutMs: 2000 }),
    );
    expect([failed.reason, failed.side, failed.message]).toEqual([
      'unreachable',
      'near',
      'the egress proxy could not be reached (ECONNREFUSED)',
    ]);
  });

  it.each([
    [502, 'unreachable', 'far'],
    [503, 'unreachable', 'far'],
    [504, 'unreachable', 'far'],
    [407, 'network', 'near'],
    [500, 'network', 'near'],
  ])('tells a CONNECT answered %s as %s on the %s side', async (status, reason, side) => {
    answer = status;
    const failed = await failure(through().send(`http://${targetHost}/`, { timeoutMs: 2000 }));
    expect([failed.reason, failed.side]).toEqual([reason, side]);
    expect(connects).toEqual([targetHost]);
    expect(received).toEqual([]);
  });

  it('fails on our side when the proxy closes the connection without answering the CONNECT', async () => {
    answer = 'close';
    const failed = await failure(through().send(`http://${targetHost}/`, { timeoutMs: 2000 }));
    expect([failed.reason, failed.side]).toEqual(['network', 'near']);
  });

  it('keeps the deadline when the proxy never answers the CONNECT (a timeout, as any)', async () => {
    answer = 'silence';
    const t0 = Date.now();
    const failed = await failure(through().send(`http://${targetHost}/`, { timeoutMs: 300 }));
    expect([failed.reason, failed.side]).toEqual(['timeout', 'far']);
    expect(Date.now() - t0).toBeLessThan(2000);
  });

  it.each([
    'proxy.internal:4750',
    'https://proxy.internal:4750',
    'socks5://proxy.internal:1080',
    'http://user:secret@proxy.internal:4750',
    'http://proxy.internal:4750/egress',
  ])('refuses the proxy setting %s at construction, naming the setting', (setting) => {
    expect(() => new OutboundClient({ proxy: setting })).toThrow(/^the outbound proxy \(OUTBOUND_PROXY\) "/);
  });

  it('takes an empty proxy setting for none (direct)', async () => {
    const direct = new OutboundClient({ allow: [targetHost], proxy: '' });
    clients.push(direct);
    expect((await direct.send(`http://${targetHost}/`, { timeoutMs: 2000 })).status).toBe(200);
    expect(connects).toEqual([]);
  });
});
