import {
  credentials,
  makeGenericClientConstructor,
  type Client,
  type ClientWritableStream,
  type ServiceError,
} from '@grpc/grpc-js';
import { contextToMetadata, type CallContext } from '../context';
import { fromGrpcError } from '../errors';
import type { RequestArg, ResponseOf, UnaryServiceDef } from './types';

export interface CallOptions {
  /** Overrides the client's default deadline for this call. */
  timeoutMs?: number;
}

/** Promise-returning, typed methods derived from a generated service definition. */
export type PromiseClient<D extends UnaryServiceDef> = {
  [M in keyof D]: (request: RequestArg<D[M]>, ctx: CallContext, opts?: CallOptions) => Promise<ResponseOf<D[M]>>;
} & { close(): void };

/**
 * One generic client for every service: each call gets a deadline and the caller's context as
 * metadata, and failures come back as `DomainError`s (UNAVAILABLE → service_unavailable,
 * DEADLINE_EXCEEDED → upstream_timeout), so callers never handle raw gRPC errors.
 */
export function createPromiseClient<D extends UnaryServiceDef>(
  definition: D,
  address: string,
  defaults: { timeoutMs: number },
): PromiseClient<D> {
  const Ctor = makeGenericClientConstructor(definition as never, 'client');
  const raw = new Ctor(address, credentials.createInsecure(), {
    'grpc.keepalive_time_ms': 30_000,
    // Reconnect quickly after a service restart instead of backing off for long.
    'grpc.initial_reconnect_backoff_ms': 200,
    'grpc.max_reconnect_backoff_ms': 1_000,
    // Spread calls over every address the name resolves to (a headless Service lists each pod).
    'grpc.service_config': JSON.stringify({ loadBalancingConfig: [{ round_robin: {} }] }),
  }) as Client & Record<string, (...args: unknown[]) => unknown>;

  const client = { close: () => raw.close() } as PromiseClient<D>;
  for (const method of Object.keys(definition)) {
    const streaming = definition[method]!.requestStream;
    (client as Record<string, unknown>)[method] = (request: unknown, ctx: CallContext, opts?: CallOptions) =>
      new Promise((resolve, reject) => {
        const deadline = new Date(Date.now() + (opts?.timeoutMs ?? defaults.timeoutMs));
        let answered = false;
        const done = (err: ServiceError | null, res: unknown) => {
          answered = true;
          if (err) reject(fromGrpcError(err));
          else resolve(res);
        };
        if (!streaming) return void raw[method]!.call(raw, request, contextToMetadata(ctx), { deadline }, done);
        const call = raw[method]!.call(raw, contextToMetadata(ctx), { deadline }, done) as ClientWritableStream<unknown>;
        writeAll(call, request as AsyncIterable<unknown>, () => answered).catch((err: unknown) => {
          // The source failed (e.g. the upload's body went bad): cancel the call, report the source's error.
          call.cancel();
          reject(err);
        });
      });
  }
  return client;
}

/**
 * Writes every message of the source in order, waiting for the stream to drain, then ends it. Stops
 * reading the source once the server has answered (a refusal before the end of an upload).
 */
async function writeAll(call: ClientWritableStream<unknown>, source: AsyncIterable<unknown>, answered: () => boolean): Promise<void> {
  for await (const message of source) {
    if (answered()) return;
    if (!call.write(message)) {
      await new Promise<void>((resolve) => {
        call.once('drain', resolve);
        call.once('status', resolve);
      });
    }
  }
  call.end();
}
