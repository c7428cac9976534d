import { Webhook } from 'standardwebhooks';

/** A delivery's body: the event's type, when it happened, and what it is about. */
export interface WebhookEvent {
  type: string;
  timestamp: string;
  data: Record<string, unknown>;
  [field: string]: unknown;
}

/**
 * Checks a delivery's signature (Standard Webhooks: `webhook-id`, `webhook-timestamp`,
 * `webhook-signature`) against the endpoint's secret (`whsec_…`; during a rotation, each of the
 * secrets in turn) and answers its event; throws when none verifies or the timestamp is more than
 * five minutes away. Pass the body exactly as received (a string or Buffer, never re-serialised JSON).
 */
export function verifyWebhook(
  payload: string | Buffer,
  headers: Record<string, string | string[] | undefined>,
  secrets: string | readonly string[],
): WebhookEvent {
  const flat = Object.fromEntries(
    Object.entries(headers).flatMap(([k, v]) =>
      v === undefined ? [] : [[k.toLowerCase(), Array.isArray(v) ? v.join(',') : v]],
    ),
  );
  let last: unknown;
  for (const secret of typeof secrets === 'string' ? [secrets] : secrets) {
    try {
      return new Webhook(secret).verify(payload, flat) as WebhookEvent;
    } catch (err) {
      last = err;
    }
  }
  throw last instanceof Error ? last : new Error('no secret given');
}
