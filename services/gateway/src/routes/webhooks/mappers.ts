import type { voiceapi } from '@voiceapi/proto';
import type { z } from '../../http/zod';
import type { Delivery, Webhook } from './schemas';

export function webhookJson(e: voiceapi.webhooks.v1.Endpoint | undefined): z.infer<typeof Webhook> {
  if (!e) throw new Error('the webhooks service answered without an endpoint');
  return {
    id: e.id,
    url: e.url,
    events: e.events,
    status: e.status as 'enabled' | 'paused' | 'disabled',
    ...(e.disabledReason && { disabledReason: e.disabledReason as 'gone' | 'failing' }),
    createdAt: (e.createTime ?? new Date(0)).toISOString(),
  };
}

export function deliveryJson(d: voiceapi.webhooks.v1.Delivery): z.infer<typeof Delivery> {
  return {
    id: d.id,
    eventId: d.eventId,
    type: d.type,
    attempts: d.attempts,
    status: d.status as 'pending' | 'succeeded' | 'failed',
    ...(d.lastStatusCode !== undefined && { lastStatusCode: d.lastStatusCode }),
    ...(d.lastError !== undefined && { lastError: d.lastError }),
    ...(d.nextAttemptTime && { nextAttemptAt: d.nextAttemptTime.toISOString() }),
    createdAt: (d.createTime ?? new Date(0)).toISOString(),
  };
}
