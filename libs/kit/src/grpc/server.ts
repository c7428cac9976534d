import { metrics } from '@opentelemetry/api';
import {
  Server,
  ServerCredentials,
  status as GrpcStatus,
  type sendUnaryData,
  type ServerReadableStream,
  type ServerUnaryCall,
  type UntypedServiceImplementation,
} from '@grpc/grpc-js';
import { HealthImplementation } from 'grpc-health-check';
import { contextFromMetadata, type CallContext } from '../context';
import { DomainError, domainErrorOf, toGrpcError } from '../errors';
import type { Logger } from '../logger';
import type { RequestArg, ResponseOf, UnaryServiceDef } from './types';

/** A service implemented as plain async functions; the adapter does the grpc-js plumbing. */
export type AsyncService<D extends UnaryServiceDef> = {
  [M in keyof D]: (request: RequestArg<D[M]>, ctx: CallContext) => Promise<ResponseOf<D[M]>>;
};

/** RED per method (RPC semconv): the grpc-js instrumentation traces calls but records no metric. */
const callDuration = metrics
  .getMeter('voiceapi.grpc')
  .createHistogram<{ 'rpc.system': string; 'rpc.method': string; 'rpc.response.status_code': string }>(
    'rpc.server.call.duration',
    {
      description: 'gRPC calls served, by method and status',
      unit: 's',
      advice: { explicitBucketBoundaries: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] },
    },
  );
const statusName = (code: number | undefined) => (code === undefined ? 'OK' : (GrpcStatus[code] ?? String(code)));

export interface ServiceRegistration {
  name: string;
  definition: UnaryServiceDef;
  implementation: UntypedServiceImplementation;
}

/** Adapts async handlers to grpc-js; an error that is not a domain error is logged and sent as bare INTERNAL. */
export function registerService<D extends UnaryServiceDef>(
  name: string,
  definition: D,
  impl: AsyncService<D>,
  log: Logger,
): ServiceRegistration {
  const implementation: UntypedServiceImplementation = {};
  for (const method of Object.keys(definition) as (keyof D & string)[]) {
    const handler = impl[method];
    const streaming = definition[method]!.requestStream;
    implementation[method] = (
      call: ServerUnaryCall<unknown, unknown> | ServerReadableStream<unknown, unknown>,
      callback: sendUnaryData<unknown>,
    ) => {
      const ctx = contextFromMetadata(call.metadata);
      // A client stream is an object-mode Readable: the handler iterates it, with backpressure.
      const request = streaming
        ? (call as ServerReadableStream<unknown, unknown>)
        : (call as ServerUnaryCall<unknown, unknown>).request;
      const started = Date.now();
      // An answer after the caller's deadline went to no one: logged, so a stall has a name.
      const late = () => {
        const deadline = call.getDeadline();
        const at = deadline instanceof Date ? deadline.getTime() : deadline;
        if (Date.now() > at)
          log.warn(
            { method, ms: Date.now() - started, requestId: ctx.requestId },
            "answered after the caller's deadline",
          );
      };
      const measured = (code: number | undefined) =>
        callDuration.record((Date.now() - started) / 1000, {
          'rpc.system': 'grpc',
          'rpc.method': `${name}/${method}`,
          'rpc.response.status_code': statusName(code),
        });
      handler(request as RequestArg<D[typeof method]>, ctx).then(
        (response) => {
          late();
          measured(undefined);
          callback(null, response);
        },
        (err: unknown) => {
          late();
          if (!(err instanceof DomainError)) {
            if (domainErrorOf(err)) log.warn({ err, method, requestId: ctx.requestId }, 'the store is unavailable');
            else log.error({ err, method, requestId: ctx.requestId }, 'unexpected error in handler');
          }
          const grpcErr = toGrpcError(err);
          measured(grpcErr.code);
          callback(grpcErr);
        },
      );
    };
  }
  return { name, definition, implementation };
}

export interface RunningGrpcServer {
  port: number;
  health: HealthImplementation;
  /** Marks the process NOT_SERVING, waits for in-flight calls, then stops. */
  drain(graceMs: number): Promise<void>;
}

export async function startGrpcServer(opts: {
  host: string;
  port: number;
  services: ServiceRegistration[];
  log: Logger;
  /** See `grpcServerEnv`: connections are closed after this age so callers spread to new replicas. */
  maxConnectionAgeMs: number;
  maxConnectionAgeGraceMs: number;
}): Promise<RunningGrpcServer> {
  const server = new Server({
    'grpc.max_receive_message_length': 8 * 1024 * 1024,
    'grpc.max_connection_age_ms': opts.maxConnectionAgeMs,
    'grpc.max_connection_age_grace_ms': opts.maxConnectionAgeGraceMs,
  });
  const statusMap: Record<string, 'SERVING' | 'NOT_SERVING'> = { '': 'SERVING' };
  for (const s of opts.services) statusMap[s.name] = 'SERVING';
  const health = new HealthImplementation(statusMap);
  health.addToServer(server);
  for (const s of opts.services) server.addService(s.definition as never, s.implementation);

  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(`${opts.host}:${opts.port}`, ServerCredentials.createInsecure(), (err, bound) =>
      err ? reject(err) : resolve(bound),
    );
  });
  opts.log.info({ port, services: opts.services.map((s) => s.name) }, 'gRPC server listening');

  return {
    port,
    health,
    drain: (graceMs) =>
      new Promise<void>((resolve) => {
        for (const name of Object.keys(statusMap)) health.setStatus(name, 'NOT_SERVING');
        // tryShutdown lets in-flight calls finish; only a drain past the grace period is forced.
        const timer = setTimeout(() => {
          opts.log.warn('gRPC drain exceeded grace period, forcing shutdown');
          server.forceShutdown();
          resolve();
        }, graceMs);
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      }),
  };
}
