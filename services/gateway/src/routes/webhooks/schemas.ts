import { z } from '../../http/zod';

/** The operator's webhook shapes (../shared/guide/operator-api.md) and the payloads tenants receive. */

export const EVENT_TYPES = [
  'call.outbound.billed',
  'call.inbound.billed',
  'credits.usage',
  'contact.status_changed',
  'agent.script_ready',
] as const;
export const EventType = z.enum(EVENT_TYPES);

export const WebhookParam = z.object({
  webhookId: z
    .string()
    .regex(/^ep_[A-Za-z0-9_-]{16}$/, 'must be a webhook id (ep_…)')
    .openapi({ example: 'ep_3kTMd8qV0bq2hF1xYzAbCd' }),
});

export const WebhookCreate = z
  .object({
    url: z.string().min(1).max(2048).openapi({
      description: 'https and public (or an `OUTBOUND_ALLOWLIST` entry); checked again at every delivery',
      example: 'https://crm.example.com/hooks/voice',
    }),
    events: z
      .array(EventType)
      .max(EVENT_TYPES.length * 2)
      .optional()
      .openapi({ description: 'Types delivered; omitted: every type, including types added later' }),
  })
  .strict();

const Secret = z.string().openapi({
  description: '`whsec_` + base64: shown this once; verify deliveries with a Standard Webhooks library',
  example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
});

export const Webhook = z
  .object({
    id: z.string(),
    url: z.string(),
    events: z.array(z.string()),
    status: z.enum(['enabled', 'paused', 'disabled']).openapi({
      description: '`paused` by the operator (deliveries wait), `disabled` by failures (see `disabledReason`)',
    }),
    disabledReason: z
      .enum(['gone', 'failing'])
      .optional()
      .openapi({ description: '`gone`: it answered 410; `failing`: no success for 5 days' }),
    createdAt: z.iso.datetime(),
  })
  .openapi('Webhook');
export const CreatedWebhook = Webhook.extend({ secret: Secret });

export const WebhookChange = z
  .object({
    url: WebhookCreate.shape.url.optional(),
    events: WebhookCreate.shape.events.openapi({
      description: 'Replaces the types delivered; an empty list: every type',
    }),
    enabled: z.boolean().optional().openapi({
      description:
        '`false` pauses deliveries (they wait); `true` sends what waited, in order, and enables an endpoint that failures disabled',
    }),
  })
  .strict();
export const ChangedWebhook = Webhook.pick({ id: true, url: true, events: true, status: true }).openapi(
  'ChangedWebhook',
);

export const Delivery = z
  .object({
    id: z.string(),
    eventId: z
      .string()
      .openapi({ description: 'The `webhook-id` header: the same on every attempt and for every endpoint' }),
    type: z.string(),
    attempts: z.number().int(),
    status: z.enum(['pending', 'succeeded', 'failed']),
    lastStatusCode: z.number().int().optional(),
    lastError: z.string().optional().openapi({
      description:
        'Why the last attempt had no status code: `timeout`, `unreachable`, `network`, `refused` (the address is not allowed), `endpoint_disabled`, `endpoint_deleted`',
    }),
    nextAttemptAt: z.iso.datetime().optional(),
    createdAt: z.iso.datetime(),
  })
  .openapi('WebhookDelivery');

export const DeliveriesQuery = z
  .object({
    limit: z.coerce
      .number()
      .int()
      .min(1)
      .max(1000)
      .default(100)
      .openapi({ description: 'Newest first; at most 1,000' }),
    status: z.enum(['pending', 'succeeded', 'failed']).optional(),
  })
  .strict();

export const RecoverBody = z
  .object({
    since: z.iso.datetime({ offset: true }).openapi({ description: 'Deliveries created at or after this time' }),
    until: z.iso.datetime({ offset: true }).optional().openapi({ description: 'Before this time; default now' }),
  })
  .strict();

// What tenants receive: `{ type, timestamp, data }`, signed per Standard Webhooks.
/** One payload: its type, the name of its schema in the document's components, and its data. */
const payload = <T extends string, D extends z.ZodTypeAny>(type: T, name: string, summary: string, data: D) => ({
  type,
  name,
  summary,
  schema: z
    .object({ type: z.literal(type), timestamp: z.iso.datetime().openapi({ description: 'When it happened' }), data })
    .openapi(name),
});

const Sandbox = z.boolean().openapi({ description: 'True when a sandbox key caused it' });

/** Who a call was with and for: null where the call has none (an inbound call has no contact or campaign). */
const CallParties = {
  contactId: z.string().nullable().openapi({ description: 'The contact (outbound)' }),
  campaignId: z.string().nullable().openapi({ description: 'The campaign (outbound)' }),
  agentId: z.string().nullable().openapi({ description: 'The inbound agent that answered' }),
};

const CallBilledData = z.object({
  callId: z.string(),
  direction: z.enum(['outbound', 'inbound']),
  ...CallParties,
  fromNumber: z.string().nullable().openapi({
    description:
      'Outbound: the number the call was placed from (the campaign’s own, or a platform number); null inbound',
  }),
  billingStatus: z.enum(['charged', 'failed', 'skipped']),
  creditsCharged: z.number().int(),
  balanceAfter: z
    .number()
    .int()
    .optional()
    .openapi({ description: 'The wallet after the ledger row; absent when no row was written' }),
  transactionId: z.string().optional().openapi({ description: 'The ledger row (`GET /credits/transactions`)' }),
  creditsError: z.string().optional().openapi({ description: 'Why it was not charged, e.g. `insufficient_credits`' }),
  durationSeconds: z.number().int(),
  endedAt: z.iso.datetime().optional(),
  sandbox: Sandbox,
});

export const WEBHOOK_PAYLOADS = [
  payload(
    'call.outbound.billed',
    'CallOutboundBilledEvent',
    'An outbound call’s charge was posted (or it was settled without one)',
    CallBilledData,
  ),
  payload(
    'call.inbound.billed',
    'CallInboundBilledEvent',
    'An inbound call’s charge was posted (or it was settled without one)',
    CallBilledData,
  ),
  payload(
    'credits.usage',
    'CreditsUsageEvent',
    'Credit was spent: one per debit row of the ledger (calls, numbers, uploads)',
    z.object({
      transactionId: z.string(),
      type: z
        .string()
        .openapi({ description: 'The ledger row’s type: `call_deduction`, `number_purchase`, `knowledge_upload`, …' }),
      credits: z.number().int().openapi({ description: 'Credits spent (positive)' }),
      balanceAfter: z.number().int(),
      callId: z.string().optional(),
      direction: z
        .enum(['outbound', 'inbound'])
        .nullable()
        .openapi({ description: 'A call’s row: its direction; null for other rows' }),
      ...CallParties,
      reference: z.string(),
      sandbox: Sandbox,
    }),
  ),
  payload(
    'contact.status_changed',
    'ContactStatusChangedEvent',
    'A contact moved to another status',
    z.object({
      contactId: z.string(),
      campaignId: z.string(),
      status: z.string(),
      previousStatus: z.string(),
      endReason: z.string().optional(),
      sandbox: Sandbox,
    }),
  ),
  payload(
    'agent.script_ready',
    'AgentScriptReadyEvent',
    'An inbound agent’s script finished generating',
    z.object({
      agentId: z.string(),
      inboundScriptStatus: z.literal('ready'),
      generatedAt: z.iso.datetime().optional(),
      sandbox: Sandbox,
    }),
  ),
] as const;
