import { createConnection, createServer, type AddressInfo, type Server as NetServer, type Socket } from 'node:net';
import { credentials, makeGenericClientConstructor } from '@grpc/grpc-js';
import { service as healthService } from 'grpc-health-check';
import { createLogger } from '../logger';
import { startGrpcServer, type RunningGrpcServer } from './server';

/** A TCP relay in front of the server that counts the connections clients open through it. */
async function countingRelay(target: number): Promise<{ port: number; connections: () => number; close: () => void }> {
  let count = 0;
  const sockets = new Set<Socket>();
  const relay: NetServer = createServer((client) => {
    count++;
    const upstream = createConnection(target, '127.0.0.1');
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => undefined);
    }
    client.pipe(upstream).pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((r) => relay.listen(0, '127.0.0.1', r));
  return {
    port: (relay.address() as AddressInfo).port,
    connections: () => count,
    close: () => {
      for (const s of sockets) s.destroy();
      relay.close();
    },
  };
}

type HealthClient = { check(req: { service: string }, cb: (err: Error | null) => void): void; close(): void };

// Connections age out, so callers that keep calling reconnect (and re-resolve the service name).
describe('gRPC server connection age', () => {
  const log = createLogger('grpc-test', 'silent');

  async function connectionsOver(maxConnectionAgeMs: number): Promise<number> {
    const server: RunningGrpcServer = await startGrpcServer({
      host: '127.0.0.1',
      port: 0,
      services: [],
      log,
      maxConnectionAgeMs,
      maxConnectionAgeGraceMs: 100,
    });
    const relay = await countingRelay(server.port);
    const Health = makeGenericClientConstructor(healthService, 'Health');
    const client = new Health(`127.0.0.1:${relay.port}`, credentials.createInsecure(), {
      'grpc.initial_reconnect_backoff_ms': 50,
      'grpc.max_reconnect_backoff_ms': 100,
    }) as unknown as HealthClient;
    try {
      const until = Date.now() + 2_000;
      while (Date.now() < until) {
        await new Promise<void>((resolve) => client.check({ service: '' }, () => resolve()));
        await new Promise((r) => setTimeout(r, 50));
      }
      return relay.connections();
    } finally {
      client.close();
      relay.close();
      await server.drain(500);
    }
  }

  it('closes a connection after its maximum age, so the caller opens a new one', async () => {
    expect(await connectionsOver(400)).toBeGreaterThanOrEqual(3);
  });

  it('keeps one connection while it is young', async () => {
    expect(await connectionsOver(60_000)).toBe(1);
  });
});
