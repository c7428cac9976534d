import {
  connectivityState,
  credentials,
  makeGenericClientConstructor,
  status,
  type Client,
  type ClientWritableStream,
  type ServiceError,
} from '@grpc/grpc-js';
import { contextToMetadata, newOperationId, type CallContext } from '../context';
import { commonReasons, fromGrpcError } from '../errors';
import type { RequestArg, ResponseOf, UnaryServiceDef } from './types';

export interface CallOptions {
  /** Overrides the client's default deadline for this call. */
  timeoutMs?: number;
  /** False fails at once (service_unavailable) while no backend is ready: for a caller with its own fallback. */
  waitForReady?: boolean;
}

export interface ClientOptions {
  /** The deadline of every call, unless the call gives its own. */
  timeoutMs: number;
  /**
   * ts-proto's generic `…ServiceDefinition`: methods whose proto declares `idempotency_level` IDEMPOTENT or
   * NO_SIDE_EFFECTS are sent again when a try is lost in flight, as reads (`get…`, `list…`) always are.
   */
  contract?: ServiceContract;
}

export interface ServiceContract {
  methods: Record<string, { options: { idempotencyLevel?: string } }>;
}

function idempotentMethods(contract: ServiceContract | undefined): Set<string> {
  const levels = new Set(['IDEMPOTENT', 'NO_SIDE_EFFECTS']);
  return new Set(
    Object.entries(contract?.methods ?? {}).flatMap(([name, m]) =>
      levels.has(m.options.idempotencyLevel ?? '') ? [name] : [],
    ),
  );
}

/** Standard methods that change nothing (AIP-131/132 and kin): safe to send again after a lost try. */
const READ_METHOD = /^(get|list|find|quote|resolve|search)[A-Z]/;

/** Tries of an idempotent call whose backend went away mid-call, within its deadline. */
const MAX_TRIES = 3;
/** Promise-returning, typed methods derived from a generated service definition. */
export type PromiseClient<D extends UnaryServiceDef> = {
  [M in keyof D]: (request: RequestArg<D[M]>, ctx: CallContext, opts?: CallOptions) => Promise<ResponseOf<D[M]>>;
} & { close(): void };

/**
 * One client for every service: deadline and caller context on each call, failures as `DomainError`s.
 * Calls wait for a ready backend (`waitForReady`, safe since nothing is sent before a connection is up).
 * A deadline passed while the backend was away is service_unavailable, not upstream_timeout. Only an
 * idempotent call lost in flight is sent again; any other may have been applied.
 */
export function createPromiseClient<D extends UnaryServiceDef>(
  definition: D,
  address: string,
  defaults: ClientOptions,
): PromiseClient<D> {
  const idempotent = idempotentMethods(defaults.contract);
  const Ctor = makeGenericClientConstructor(definition as never, 'client');
  const raw = new Ctor(address, credentials.createInsecure(), {
    'grpc.keepalive_time_ms': 30_000,
    // Reconnect quickly after a service restart instead of backing off for long.
    'grpc.initial_reconnect_backoff_ms': 200,
    'grpc.max_reconnect_backoff_ms': 500,
    // Spread calls over every address the name resolves to (a headless Service lists each pod).
    'grpc.service_config': JSON.stringify({ loadBalancingConfig: [{ round_robin: {} }] }),
    // Re-resolve at most every 1 s, not grpc-js's 30 s: a rollout replaces both pods within seconds, and
    // with 30 s the client knew only the old pods (~10 s of failed calls in test/cluster's drain test).
    'grpc.dns_min_time_between_resolutions_ms': 1_000,
  }) as Client & Record<string, (...args: unknown[]) => unknown>;

  const client = { close: () => raw.close() } as PromiseClient<D>;
  const notReady = () => raw.getChannel().getConnectivityState(false) !== connectivityState.READY;
  for (const method of Object.keys(definition)) {
    const streaming = definition[method]!.requestStream;
    const retryable = !streaming && (READ_METHOD.test(method) || idempotent.has(method));
    const once = (request: unknown, ctx: CallContext, deadline: Date, waitForReady: boolean) =>
      new Promise((resolve, reject: (err: ServiceError | Error) => void) => {
        let answered = false;
        const done = (err: ServiceError | null, res: unknown) => {
          answered = true;
          if (err) reject(err);
          else resolve(res);
        };
        const metadata = contextToMetadata(ctx);
        metadata.setOptions({ waitForReady });
        if (!streaming) return void raw[method]!.call(raw, request, metadata, { deadline }, done);
        const call = raw[method]!.call(raw, metadata, { deadline }, done) as ClientWritableStream<unknown>;
        writeAll(call, request as AsyncIterable<unknown>, () => answered).catch((err: unknown) => {
          // The source failed (e.g. the upload's body went bad): cancel the call, report the source's error.
          call.cancel();
          reject(err instanceof Error ? err : new Error(String(err)));
        });
      });
    (client as Record<string, unknown>)[method] = async (request: unknown, ctx: CallContext, opts?: CallOptions) => {
      const deadline = new Date(Date.now() + (opts?.timeoutMs ?? defaults.timeoutMs));
      const waitForReady = opts?.waitForReady ?? true;
      // Every try of a write declared idempotent carries one operation id (the server dedupes by it).
      const callCtx = idempotent.has(method) && !ctx.operationId ? { ...ctx, operationId: newOperationId() } : ctx;
      // A try began while the backend was away (an idle channel, not yet asked to connect, is not away).
      let waited = false;
      for (let tries = 1; ; tries++) {
        try {
          const state = raw.getChannel().getConnectivityState(false);
          waited ||= state === connectivityState.CONNECTING || state === connectivityState.TRANSIENT_FAILURE;
          return await once(request, callCtx, deadline, waitForReady);
        } catch (err) {
          const code = (err as Partial<ServiceError>).code;
          if (code === undefined) throw err; // not the call's failure (an upload's source)
          // A killed backend gives UNAVAILABLE, or CANCELLED when its server shut down under the call
          // (this client cancels only an upload whose source failed, thrown above).
          const inFlightLost = (code === status.UNAVAILABLE || code === status.CANCELLED) && waitForReady;
          if (inFlightLost && retryable && tries < MAX_TRIES && deadline.getTime() > Date.now()) continue;
          // A backend that came back only as the deadline passed is as away as one still gone.
          if (code === status.DEADLINE_EXCEEDED && (notReady() || waited)) {
            throw commonReasons.error(
              'service_unavailable',
              'a backing service is unavailable (no ready backend before the deadline), retry shortly',
            );
          }
          throw fromGrpcError(err);
        }
      }
    };
  }
  return client;
}

/** Writes the source with backpressure; stops once the server has answered (a refusal mid-upload). */
async function writeAll(
  call: ClientWritableStream<unknown>,
  source: AsyncIterable<unknown>,
  answered: () => boolean,
): Promise<void> {
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
