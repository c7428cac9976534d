import { connectCallees } from '@voiceapi/kit/grpc';
import type { OpenedService } from '@voiceapi/kit/service';
import { billingHoldQuote } from '../clients/billing';
import { webhookReaders } from '../clients/webhooks';
import { callees, type Config } from '../config';

export type Clients = ReturnType<typeof connectClients>;

/** The ports leads reaches other services through; each gRPC client closes on stop. */
export function connectClients({ cfg, lifecycle }: OpenedService<Config>) {
  const grpc = connectCallees(callees, cfg, { timeoutMs: cfg.GRPC_DEADLINE_MS, closeOn: lifecycle });
  return {
    holdQuote: billingHoldQuote(grpc.billing),
    webhooks: webhookReaders(grpc.webhooks, cfg.WEBHOOK_TYPES_CACHE_MS),
  };
}
