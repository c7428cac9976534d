import { Agent, createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { closeHttp } from './drain';

// Clients on keep-alive connections post back to back while the server stops. A request the server
// cuts after the client sent it (ECONNRESET, "socket hang up") is a failed request; one refused at
// connect was never sent, and a client may send it anywhere: ECONNREFUSED (the listener gone), or
// ECONNRESET while connecting (a connection still in the listen backlog when the listener closed,
// reset by the kernel: seen on a loaded machine).

type Outcome =
  | { kind: 'answered'; connection: string | undefined; afterStop: boolean }
  | { kind: 'refused' }
  | { kind: 'cut'; error: string };

function post(
  port: number,
  agent: Agent,
): Promise<Omit<Extract<Outcome, { kind: 'answered' }>, 'afterStop'> | Exclude<Outcome, { kind: 'answered' }>> {
  return new Promise((resolve) => {
    const req = request(
      { host: '127.0.0.1', port, method: 'POST', path: '/', agent, headers: { 'content-type': 'text/plain' } },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ kind: 'answered', connection: res.headers.connection }));
      },
    );
    req.on('error', (err: NodeJS.ErrnoException) =>
      resolve(
        err.code === 'ECONNREFUSED' || err.syscall === 'connect'
          ? { kind: 'refused' }
          : { kind: 'cut', error: `${err.code ?? ''} ${err.message}` },
      ),
    );
    req.end('lead');
  });
}

describe('closeHttp: a stopping gateway lets its keep-alive clients go without cutting a request', () => {
  let server: Server;
  afterEach(() => server?.closeAllConnections());

  it('answers every request sent before the listener closes, asking the client to reconnect, and cuts none', async () => {
    server = createServer((_req, res) => setTimeout(() => res.end('ok'), 2));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    const agent = new Agent({ keepAlive: true, maxSockets: 4 });
    // Set in the same synchronous step as closeHttp starts: a request sent once it is true reaches the
    // server after closeHttp took over (a millisecond clock would count one sent just before as after).
    let stopped = false;
    const outcomes: Outcome[] = [];
    const loops = Array.from({ length: 4 }, async () => {
      // Until the listener is gone: each loop ends on its first refused connection.
      for (let i = 0; i < 2_000; i++) {
        const sentAfterStop = stopped;
        const o = await post(port, agent);
        outcomes.push(o.kind === 'answered' ? { ...o, afterStop: sentAfterStop } : o);
        if (o.kind !== 'answered') return;
        await new Promise((r) => setTimeout(r, 3));
      }
    });
    await new Promise((r) => setTimeout(r, 150));
    stopped = true;
    await closeHttp(server, { drainMs: 2_000, quietMs: 300 });
    await Promise.all(loops);
    agent.destroy();

    expect(outcomes.filter((o) => o.kind === 'cut')).toEqual([]);
    const afterStop = outcomes.filter(
      (o): o is Extract<Outcome, { kind: 'answered' }> => o.kind === 'answered' && o.afterStop,
    );
    // Answered after the stop, each with `Connection: close`: the clients moved on by themselves.
    expect(afterStop.length).toBeGreaterThan(0);
    expect(afterStop.filter((o) => o.connection !== 'close')).toEqual([]);
    expect(outcomes.filter((o) => o.kind === 'refused').length).toBe(4);
  });

  it('does not wait for clients that went quiet', async () => {
    server = createServer((_req, res) => res.end('ok'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const agent = new Agent({ keepAlive: true });
    expect((await post((server.address() as AddressInfo).port, agent)).kind).toBe('answered');
    // One idle keep-alive connection is open; nobody sends on it.
    const started = Date.now();
    await closeHttp(server, { drainMs: 5_000, quietMs: 300 });
    expect(Date.now() - started).toBeLessThan(2_000);
    agent.destroy();
  });
});
