import { connectCallees } from '@voiceapi/kit/grpc';
import type { OpenedService } from '@voiceapi/kit/service';
import { billingWallet } from '../clients/billing';
import { callees, type Config } from '../config';

export type Clients = ReturnType<typeof connectClients>;

/** The ports knowledge reaches other services through; their gRPC clients close on stop. */
export function connectClients({ cfg, lifecycle }: OpenedService<Config>) {
  const grpc = connectCallees(callees, cfg, { timeoutMs: cfg.GRPC_DEADLINE_MS, closeOn: lifecycle });
  return { wallet: billingWallet(grpc.billing) };
}
