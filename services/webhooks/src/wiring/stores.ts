import { ensureIndexes } from '@voiceapi/kit/mongo';
import type { OpenedService } from '@voiceapi/kit/service';
import type { Config } from '../config';
import { DeliveryStore } from '../store/delivery-store';
import { EndpointStore } from '../store/endpoint-store';

export type Stores = Awaited<ReturnType<typeof openStores>>;

/** Endpoints and deliveries, their indexes built (webhooks has no outbox, whose start would build them). */
export async function openStores({ cfg, conn }: OpenedService<Config>) {
  const endpoints = new EndpointStore(conn, { cacheTtlMs: cfg.WEBHOOK_ENDPOINT_CACHE_TTL_MS });
  const deliveries = new DeliveryStore(conn);
  await ensureIndexes(conn);
  return { endpoints, deliveries };
}
