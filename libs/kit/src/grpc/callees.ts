import { z } from 'zod';
import { grpcAddress, grpcServerEnv } from '../config';
import type { Lifecycle } from '../lifecycle';
import { createPromiseClient, type ClientOptions, type PromiseClient, type ServiceContract } from './client';
import type { UnaryServiceDef } from './types';

// The kit names no service: callers pass a selection of a generated list (@voiceapi/proto's grpcCallees, from
// services/manifest.json), so a service's address setting and default are written once, in the manifest.

/** A gRPC service another process calls. */
export interface Callee {
  readonly name: string;
  /** The setting that holds its address (`host:port`, `dns:///host:port`, `ipv4:…`: see `grpcAddress`). */
  readonly addressEnv: string;
  /** Its address when that setting is unset. */
  readonly defaultAddress: string;
  /** ts-proto's grpc-js definition, which the client is made from. */
  readonly service: UnaryServiceDef;
  /** ts-proto's generic definition: which methods may be sent again (`ClientOptions.contract`). */
  readonly contract: ServiceContract;
}

export type Callees = Readonly<Record<string, Callee>>;

/** The settings that hold the callees' addresses. */
export type CalleeSettings<C extends Callees> = Readonly<Record<C[keyof C]['addressEnv'], string>>;

/** One typed promise client per callee, under the callee's key. */
export type CalleeClients<C extends Callees> = { [K in keyof C]: PromiseClient<C[K]['service']> };

export interface CalleeOptions extends Omit<ClientOptions, 'contract'> {
  /** Each client closes on stop, as a hook `<key> client`, registered in the callees' order... */
  closeOn?: Lifecycle;
  /** ...or all of them in one hook of this name. */
  closeAs?: string;
}

/** `companies` → `companies'`, `billing` → `billing's`. */
const possessive = (name: string) => (name.endsWith('s') ? `${name}'` : `${name}'s`);

/**
 * The config fields of a process that calls `callees`, spread into its schema: each callee's address setting,
 * defaulting to its address in services/manifest.json and described as `<callee>'s gRPC address`, followed by
 * `: <purpose>` when `purposes` (by the callees' keys) says what the process calls it for; and the calls' deadline.
 */
export function calleeSettings<C extends Callees>(
  callees: C,
  purposes: { readonly [K in keyof C]?: string } = {},
): { [K in keyof C as C[K]['addressEnv']]: z.ZodDefault<typeof grpcAddress> } & typeof callerEnv {
  return {
    ...Object.fromEntries(
      Object.entries(callees).map(([key, c]) => {
        const purpose = (purposes as Readonly<Record<string, string | undefined>>)[key];
        const description = `${possessive(c.name)} gRPC address${purpose ? `: ${purpose}` : ''}`;
        return [c.addressEnv, grpcAddress.default(c.defaultAddress).describe(description)];
      }),
    ),
    ...callerEnv,
  } as never;
}

const callerEnv = {
  GRPC_DEADLINE_MS: z.coerce
    .number()
    .int()
    .positive()
    .default(5_000)
    .describe("each call's deadline to the services it calls"),
};

/**
 * The config fields of the gRPC service `self` is (its entry of @voiceapi/proto's grpcCallees): where it listens, on
 * the port services/manifest.json gives it, and its connections' age (`grpcServerEnv`).
 */
export function grpcServiceEnv(self: Callee) {
  const port = Number(self.defaultAddress.slice(self.defaultAddress.lastIndexOf(':') + 1));
  return {
    ...grpcServerEnv,
    GRPC_HOST: z.string().default('127.0.0.1').describe('the address the gRPC server listens on'),
    GRPC_PORT: z.coerce.number().int().min(0).max(65535).default(port).describe("the gRPC server's port"),
  };
}

/** A client of each callee at the address its setting holds; each carries its callee's contract. */
export function connectCallees<C extends Callees>(
  callees: C,
  cfg: CalleeSettings<C>,
  options: CalleeOptions,
): CalleeClients<C> {
  const { closeOn, closeAs, ...defaults } = options;
  const clients = Object.fromEntries(
    Object.entries(callees).map(([key, c]) => [
      key,
      createPromiseClient(c.service, (cfg as Record<string, string>)[c.addressEnv]!, {
        ...defaults,
        contract: c.contract,
      }),
    ]),
  ) as CalleeClients<C>;
  if (closeOn && closeAs !== undefined) closeOn.onStop(closeAs, () => closeClients(clients));
  else if (closeOn)
    for (const [key, client] of Object.entries<{ close(): void }>(clients))
      closeOn.onStop(`${key} client`, () => client.close());
  return clients;
}

/** Closes every client of a `connectCallees` result, for a caller that stops them in a hook of its own. */
export function closeClients(clients: object): void {
  for (const c of Object.values(clients) as { close(): void }[]) c.close();
}
