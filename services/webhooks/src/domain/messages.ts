import { createHash } from 'node:crypto';

/** What tenants can subscribe to; an endpoint registered without a list receives all of them. */
export const WEBHOOK_EVENT_TYPES = [
  'call.outbound.billed',
  'call.inbound.billed',
  'credits.usage',
  'contact.status_changed',
  'agent.script_ready',
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

export const isEventType = (t: string): t is WebhookEventType => (WEBHOOK_EVENT_TYPES as readonly string[]).includes(t);

/**
 * One thing that happened, as tenants receive it. The same platform event always gives the same id and body
 * (a Kafka redelivery, a second endpoint, a recovery), so receivers can de-duplicate by `webhook-id`.
 */
export interface WebhookMessage {
  /** `msg_…`, derived from the platform event id. */
  id: string;
  tenantId: string;
  type: WebhookEventType;
  /** `{ type, timestamp, data }` as JSON: exactly the bytes signed and sent. */
  body: string;
}

export function webhookMessage(
  sourceEventId: string,
  tenantId: string,
  type: WebhookEventType,
  occurredAt: Date,
  data: Record<string, unknown>,
): WebhookMessage {
  return {
    id: `msg_${digest(sourceEventId)}`,
    tenantId,
    type,
    body: JSON.stringify({ type, timestamp: occurredAt.toISOString(), data }),
  };
}

/** The body's `timestamp`, found where `webhookMessage` writes it, without parsing the body. */
export function occurredAtOf(body: string): Date | undefined {
  const key = '"timestamp":"';
  const from = body.indexOf(key);
  if (from < 0 || from > 100) return undefined;
  const to = body.indexOf('"', from + key.length);
  const at = new Date(body.slice(from + key.length, to));
  return to < 0 || Number.isNaN(at.getTime()) ? undefined : at;
}

/** One message to one endpoint: a stable id, so a repeated fan-out finds the delivery it made. */
export const deliveryId = (endpointId: string, messageId: string): string =>
  `dlv_${digest(`${endpointId}/${messageId}`)}`;

function digest(s: string): string {
  return createHash('sha256').update(s).digest('base64url').slice(0, 27);
}
