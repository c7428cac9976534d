import { Server, ServerCredentials, type sendUnaryData, type ServerUnaryCall } from '@grpc/grpc-js';
import { createServer, type AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { createPromiseClient } from './client';
import type { UnaryServiceDef } from './types';

// A two-method service with JSON messages: one standard read, one write.
const json = {
  requestStream: false as const,
  responseStream: false as const,
  requestSerialize: (v: never) => Buffer.from(JSON.stringify(v)),
  requestDeserialize: (b: Buffer) => JSON.parse(b.toString()) as unknown,
  responseSerialize: (v: never) => Buffer.from(JSON.stringify(v)),
  responseDeserialize: (b: Buffer) => JSON.parse(b.toString()) as unknown,
};
const definition = {
  getThing: { path: '/test.Things/GetThing', ...json },
  putThing: { path: '/test.Things/PutThing', ...json },
} satisfies UnaryServiceDef;

type Handler = (call: ServerUnaryCall<unknown, unknown>, done: sendUnaryData<unknown>) => void;

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  const { port } = probe.address() as AddressInfo;
  await new Promise((r) => probe.close(r));
  return port;
}

async function serve(port: number, handlers: { getThing?: Handler; putThing?: Handler }): Promise<Server> {
  const server = new Server();
  const answer: Handler = (_call, done) => done(null, { ok: true });
  server.addService(definition as never, {
    getThing: handlers.getThing ?? answer,
    putThing: handlers.putThing ?? answer,
  });
  await new Promise<void>((resolve, reject) =>
    server.bindAsync(`127.0.0.1:${port}`, ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())),
  );
  return server;
}

const ctx = { tenantId: 't1', keyMode: 'live' as const };

describe('gRPC client over a restart', () => {
  const servers: Server[] = [];
  afterEach(() => servers.splice(0).forEach((s) => s.forceShutdown()));

  it('waits for a backend that comes up before the deadline, instead of failing at once', async () => {
    const port = await freePort();
    const client = createPromiseClient(definition, `127.0.0.1:${port}`, { timeoutMs: 5_000 });
    try {
      const answer = client.putThing({}, ctx);
      await sleep(400); // the call is waiting: nothing listens yet
      servers.push(await serve(port, {}));
      await expect(answer).resolves.toEqual({ ok: true });
    } finally {
      client.close();
    }
  });

  it('says service_unavailable (not upstream_timeout) when no backend was ready by the deadline, and fails at once without waitForReady', async () => {
    const port = await freePort();
    const client = createPromiseClient(definition, `127.0.0.1:${port}`, { timeoutMs: 400 });
    try {
      await expect(client.getThing({}, ctx)).rejects.toMatchObject({ reasonCode: 'service_unavailable' });
      const started = Date.now();
      await expect(client.getThing({}, ctx, { waitForReady: false, timeoutMs: 5_000 })).rejects.toMatchObject({
        reasonCode: 'service_unavailable',
      });
      expect(Date.now() - started).toBeLessThan(2_000);
    } finally {
      client.close();
    }
  });

  it('says service_unavailable when its backend came back too late to answer within the deadline', async () => {
    const port = await freePort();
    const client = createPromiseClient(definition, `127.0.0.1:${port}`, { timeoutMs: 400 });
    try {
      // The backend is away: the channel is reconnecting when the call begins.
      await expect(client.getThing({}, ctx)).rejects.toMatchObject({ reasonCode: 'service_unavailable' });
      const answer = client.getThing({}, ctx, { timeoutMs: 1_200 });
      await sleep(200);
      // Back, but slower than what is left of the deadline (a restarted process warming up).
      servers.push(
        await serve(port, { getThing: (_call, done) => void setTimeout(() => done(null, { ok: true }), 2_000) }),
      );
      await expect(answer).rejects.toMatchObject({ reasonCode: 'service_unavailable' });
    } finally {
      client.close();
    }
  });

  it('says upstream_timeout when a ready backend is too slow', async () => {
    const port = await freePort();
    servers.push(
      await serve(port, { getThing: (_call, done) => void setTimeout(() => done(null, { ok: true }), 1_000) }),
    );
    const client = createPromiseClient(definition, `127.0.0.1:${port}`, { timeoutMs: 300 });
    try {
      await expect(client.getThing({}, ctx)).rejects.toMatchObject({ reasonCode: 'upstream_timeout' });
    } finally {
      client.close();
    }
  });

  it('sends a read again when its backend died with the call in flight, but not a write', async () => {
    const port = await freePort();
    const seen = { getThing: 0, putThing: 0 };
    // The first backend dies while it holds each call; the next one answers.
    let restarted: Promise<void> = Promise.resolve();
    const dying =
      (name: keyof typeof seen): Handler =>
      () => {
        seen[name]++;
        servers.splice(0).forEach((s) => s.forceShutdown());
        restarted = sleep(200).then(async () => void servers.push(await serve(port, {})));
      };
    const client = createPromiseClient(definition, `127.0.0.1:${port}`, { timeoutMs: 5_000 });
    try {
      servers.push(await serve(port, { getThing: dying('getThing') }));
      await expect(client.getThing({}, ctx)).resolves.toEqual({ ok: true });
      expect(seen.getThing).toBe(1);

      await sleep(300);
      servers.splice(0).forEach((s) => s.forceShutdown());
      servers.push(await serve(port, { putThing: dying('putThing') }));
      await expect(client.putThing({}, ctx)).rejects.toMatchObject({ reasonCode: 'service_unavailable' });
      expect(seen.putThing).toBe(1);
    } finally {
      client.close();
      await restarted; // the backend started after the write failed is shut down with the others
    }
  });

  it('sends a write its contract declares idempotent again, every try carrying the same operation id', async () => {
    const port = await freePort();
    const operationIds: unknown[] = [];
    let restarted: Promise<void> = Promise.resolve();
    const client = createPromiseClient(definition, `127.0.0.1:${port}`, {
      timeoutMs: 5_000,
      contract: { methods: { putThing: { options: { idempotencyLevel: 'IDEMPOTENT' } } } },
    });
    try {
      servers.push(
        await serve(port, {
          putThing: (call) => {
            operationIds.push(call.metadata.get('operation-id')[0]);
            servers.splice(0).forEach((s) => s.forceShutdown());
            restarted = sleep(200).then(async () => {
              const next = await serve(port, {
                putThing: (again, done) => {
                  operationIds.push(again.metadata.get('operation-id')[0]);
                  done(null, { ok: true });
                },
              });
              servers.push(next);
            });
          },
        }),
      );
      await expect(client.putThing({}, ctx)).resolves.toEqual({ ok: true });
      expect(operationIds).toHaveLength(2);
      expect(operationIds[0]).toMatch(/^[0-9a-f]{24}$/);
      expect(operationIds[1]).toBe(operationIds[0]);
      // The next call is another operation.
      await expect(client.putThing({}, ctx)).resolves.toEqual({ ok: true });
      expect(operationIds[2]).not.toBe(operationIds[0]);
    } finally {
      client.close();
      await restarted;
    }
  });
});
