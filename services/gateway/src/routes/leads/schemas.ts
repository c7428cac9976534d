// Over 300 lines because the leads area's request and response schemas reference each other; they stay together so the OpenAPI document has one source per area.
import { name, text, z } from '../../http/zod';
import { CallAnalysis, TranscriptTurn } from '../telephony/schemas';

/** The HTTP shapes of campaigns, leads, contacts, events and omni templates (decisions file, "Endpoint shapes"). */

export const CHANNELS = ['call', 'whatsapp', 'email'] as const;
export const MESSAGE_CHANNELS = ['whatsapp', 'email'] as const;
export const CONTACT_STATUSES = [
  'sandbox_accepted',
  'scheduled',
  'queued',
  'dialing',
  'in_call',
  'completed',
  'failed',
  'cancelled',
  'messaged',
] as const;
export const WEEKDAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const;

const ISO = '2026-11-22T09:30:00.000Z';
const HEX_ID = /^[a-fA-F0-9]{24}$/;
const id = (what: string) =>
  z
    .string()
    .regex(HEX_ID, 'must be a 24-character hex id')
    .openapi({ description: what, example: '665f1c2b9d3e4a0012345678' });

export const Channel = z.enum(CHANNELS).openapi({ description: '`call`, `whatsapp` or `email`' });
export const MessageChannel = z.enum(MESSAGE_CHANNELS);

/** Letters, digits and `. _ : -`, 1–100 characters, as CRMs name their events. */
export const EventType = z
  .string()
  .max(100)
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9._:-]{0,99}$/,
    'must be 1–100 letters, digits, ".", "_", ":" or "-", starting with a letter or digit',
  )
  .openapi({ example: 'deal.won' });

// ---- Leads and events ----

const Consent = z
  .strictObject({
    outboundCall: z.boolean().openapi({ description: 'Must be `true` for the `call` channel' }),
    capturedAt: z.iso.datetime({ offset: true, error: 'must be an ISO 8601 date-time' }).optional().openapi({
      description:
        'When the consent was captured (ISO 8601); not in the future (a minute of clock difference is allowed). Kept as evidence',
      example: '2026-11-20T14:03:00Z',
    }),
    source: text(200).optional().openapi({
      description: 'Where the consent was captured (free text, at most 200 characters), e.g. the web form',
      example: 'web form /pricing',
    }),
  })
  .openapi('LeadConsent');

const placeholderValues = z
  .record(z.string().min(1).max(64), z.string({ error: 'values must be strings' }).max(2_000))
  .refine((o) => Object.keys(o).length <= 50, 'at most 50 values');

const leadFields = {
  phone: z.string().min(1).max(32).openapi({
    description:
      'International format with a leading plus (E.164, formatting characters allowed), checked against real numbering plans; refused with 400 otherwise',
    example: '+14155550123',
  }),
  name: name(200)
    .optional()
    .openapi({ description: 'The person’s name (1–200 characters after trimming)', example: 'Ada Lovelace' }),
  email: z
    .email()
    .max(254)
    .optional()
    .openapi({ description: 'Required with the `email` channel', example: 'ada@example.com' }),
  channel: Channel.optional().openapi({ description: 'One channel; or send `channels`. Neither: `call`' }),
  channels: z
    .array(Channel)
    .min(1, 'name at least one channel')
    .refine((c) => new Set(c).size === c.length, 'each channel at most once')
    .optional()
    .openapi({
      description:
        'Several channels, e.g. `["whatsapp", "email"]` (WhatsApp plus email without a call). Not empty, no duplicates',
    }),
  consent: Consent.optional(),
  templateVariables: placeholderValues.optional().openapi({
    description: 'Values of the email template’s `{{key}}` placeholders (strings)',
    example: { first_name: 'Ada' },
  }),
  whatsappParams: z
    .union([z.array(z.string({ error: 'values must be strings' }).max(2_000)).max(50), placeholderValues])
    .optional()
    .openapi({
      description:
        'Values of the WhatsApp template’s `{{1}}`, `{{2}}` placeholders: a list (first is `{{1}}`) or an object `{ "1": "…" }`',
      example: ['Ada', 'Tuesday 10:00'],
    }),
  whatsappTemplateId: id(
    'An omni template of the `whatsapp` channel (`GET /omni/templates`); required with that channel',
  ).optional(),
  emailTemplateId: id('An omni template of the `email` channel; required with that channel').optional(),
};

const oneChannelField = <T extends { channel?: unknown; channels?: unknown }>(b: T) =>
  !(b.channel !== undefined && b.channels !== undefined);
const ONE_CHANNEL_FIELD = { message: 'send either channel or channels, not both', path: ['channels'] };

export const Lead = z
  .strictObject({ campaignId: id('An API campaign of this tenant, running'), ...leadFields })
  .refine(oneChannelField, ONE_CHANNEL_FIELD)
  .openapi('Lead', {
    example: {
      campaignId: '665f1c2b9d3e4a0012345678',
      phone: '+14155550123',
      name: 'Ada Lovelace',
      channel: 'call',
      consent: { outboundCall: true, capturedAt: '2026-11-20T14:03:00Z', source: 'web form /pricing' },
    },
  });

export const LeadEvent = z
  .strictObject({ eventType: EventType, ...leadFields })
  .refine(oneChannelField, ONE_CHANNEL_FIELD)
  .openapi('LeadEvent', {
    example: {
      eventType: 'deal.won',
      phone: '+14155550123',
      name: 'Ada Lovelace',
      channel: 'call',
      consent: { outboundCall: true, capturedAt: '2026-11-20T14:03:00Z', source: 'crm' },
    },
  });

export const LeadAccepted = z
  .object({
    status: z
      .enum(['accepted', 'sandbox_accepted'])
      .openapi({ description: '`sandbox_accepted` for a sandbox key: recorded, never dialled, messaged or charged' }),
    contactId: z.string(),
    campaignId: z.string(),
    channels: z.array(Channel),
    contactStatus: z.enum(CONTACT_STATUSES).openapi({
      description:
        '`queued` (dialled or messaged now), `scheduled` (outside the calling window: see `nextAttemptAt`) or `sandbox_accepted`',
    }),
    nextAttemptAt: z.iso.datetime().nullable().openapi({
      description:
        'When a `scheduled` contact is dialled: the calling window’s opening in the called party’s time zone',
    }),
  })
  .openapi('LeadAccepted', {
    example: {
      status: 'accepted',
      contactId: '665f1c2b9d3e4a00123456c1',
      campaignId: '665f1c2b9d3e4a0012345678',
      channels: ['call'],
      contactStatus: 'queued',
      nextAttemptAt: null,
    },
  });

// ---- Batch ingest ----

/** Most leads in one batch, and the largest batch body (decisions file, "Batch lead ingest"). */
export const MAX_BATCH_LEADS = 1_000;
export const BATCH_BODY_LIMIT_BYTES = 2 * 1024 * 1024;

const ExternalId = z
  .string()
  .regex(/^[A-Za-z0-9_.:-]{1,128}$/, 'must be 1–128 letters, digits, "_", ".", ":" or "-"')
  .openapi({
    description:
      'Your own id of the lead (1–128 letters, digits, `_ . : -`), unique per tenant and key mode: a lead sent again with an id already accepted is not ingested again',
    example: 'crm-48213',
  });

export const BatchLead = z
  .strictObject({
    campaignId: id('The lead’s campaign; omitted: the batch’s `campaignId`').optional(),
    externalId: ExternalId.optional(),
    ...leadFields,
  })
  .refine(oneChannelField, ONE_CHANNEL_FIELD)
  .openapi('BatchLead', {
    description:
      'A lead as the body of `POST /leads`, with an optional `externalId`; `campaignId` may come from the batch',
    example: {
      externalId: 'crm-48213',
      phone: '+14155550123',
      name: 'Ada Lovelace',
      channel: 'call',
      consent: { outboundCall: true, capturedAt: '2026-11-20T14:03:00Z', source: 'crm' },
    },
  });

const batchFrame = {
  campaignId: id('The campaign of every lead that names none').optional(),
};

/** What the request itself must be; each lead is checked against `BatchLead` on its own (a lead that does not fit is refused in its result). */
export const LeadBatchFrame = z.strictObject({
  ...batchFrame,
  leads: z
    .array(z.unknown())
    .min(1, 'send at least one lead')
    .max(MAX_BATCH_LEADS, `at most ${MAX_BATCH_LEADS} leads per batch`),
});

export const LeadBatch = z
  .strictObject({ ...batchFrame, leads: z.array(BatchLead).min(1).max(MAX_BATCH_LEADS) })
  .openapi('LeadBatch', {
    example: {
      campaignId: '665f1c2b9d3e4a0012345678',
      leads: [
        {
          externalId: 'crm-48213',
          phone: '+14155550123',
          name: 'Ada Lovelace',
          channel: 'call',
          consent: { outboundCall: true, capturedAt: '2026-11-20T14:03:00Z', source: 'crm' },
        },
        {
          externalId: 'crm-48214',
          phone: '+14155550199',
          name: 'Alan Turing',
          channel: 'call',
          consent: { outboundCall: true, capturedAt: '2026-11-20T14:05:00Z', source: 'crm' },
        },
      ],
    },
  });

export const BatchLeadResult = z
  .object({
    index: z.number().int().openapi({ description: 'The lead’s place in `leads`, from 0' }),
    externalId: z.string().optional(),
    status: z.enum(['accepted', 'scheduled', 'sandbox_accepted', 'refused']).openapi({
      description:
        '`accepted` (dialled or messaged now), `scheduled` (outside the calling window: see `nextAttemptAt`), `sandbox_accepted` (a sandbox key), or `refused` (see `reasonCode`)',
    }),
    contactId: z.string().optional(),
    nextAttemptAt: z.iso.datetime().optional().openapi({ description: 'When a `scheduled` lead is dialled' }),
    reasonCode: z.string().optional().openapi({
      description:
        'Why it was refused: the code `POST /leads` would answer (`validation_error`, `consent_required`, `do_not_call`, …)',
    }),
    error: z.string().optional(),
    details: z
      .array(z.object({ path: z.string(), message: z.string() }))
      .optional()
      .openapi({ description: 'Field problems, named from the request body (`body.leads.3.phone`)' }),
    duplicate: z.boolean().optional().openapi({
      description:
        'True when a lead with this `externalId` was accepted before: nothing was ingested now, and the result repeats the first one',
    }),
  })
  .openapi('BatchLeadResult');

export const LeadBatchResult = z
  .object({
    accepted: z.number().int().openapi({ description: 'Leads not refused (duplicates included)' }),
    refused: z.number().int(),
    results: z.array(BatchLeadResult).openapi({ description: 'One per lead, in the order sent' }),
  })
  .openapi('LeadBatchResult', {
    example: {
      accepted: 1,
      refused: 1,
      results: [
        { index: 0, externalId: 'crm-48213', status: 'accepted', contactId: '665f1c2b9d3e4a00123456c1' },
        {
          index: 1,
          externalId: 'crm-48214',
          status: 'refused',
          reasonCode: 'do_not_call',
          error: 'the number is on the tenant do-not-call list',
          details: [{ path: 'body.leads.1.phone', message: "on the tenant's do-not-call list" }],
        },
      ],
    },
  });

// ---- Campaigns and contacts ----

export const CallingWindow = z
  .object({
    always: z.boolean().openapi({ description: 'Calls at any hour (start, end and days are then null and empty)' }),
    start: z.string().nullable().openapi({ example: '08:00' }),
    end: z.string().nullable().openapi({ example: '21:00' }),
    days: z.array(z.enum(WEEKDAYS)).openapi({ description: 'Empty: every day' }),
  })
  .openapi('CallingWindow', {
    description: 'Local times in the called party’s time zone(s), derived from the number: [start, end) on `days`',
  });

export const Campaign = z
  .object({
    id: z.string(),
    name: z.string(),
    type: z.enum(['api', 'csv']),
    status: z.enum(['draft', 'running', 'paused', 'completed']),
    channels: z.array(Channel),
    agentName: z.string().nullable(),
    fromNumber: z
      .string()
      .nullable()
      .openapi({ description: 'The tenant’s own number its calls are placed from; null: a platform number' }),
    callingWindow: CallingWindow,
    maxCallSeconds: z.number().int(),
    maxAttempts: z.number().int(),
    retryAfterMinutes: z.number().int(),
    stats: z.object({
      contacts: z.number().int().openapi({ description: 'Every contact' }),
      queued: z.number().int().openapi({ description: 'Waiting or in progress: scheduled, queued, dialing, in_call' }),
      completed: z.number().int().openapi({ description: 'completed or messaged' }),
      failed: z.number().int(),
    }),
    createdAt: z.iso.datetime(),
    updatedAt: z.iso.datetime(),
  })
  .openapi('Campaign');

const WindowCheck = z.object({
  window: CallingWindow,
  timeZones: z
    .array(z.string())
    .openapi({ description: 'The called party’s zones, from the number; the window must be open in all of them' }),
  timeZoneSource: z
    .enum(['number', 'fallback'])
    .openapi({ description: '`fallback`: the number names no zone, UTC was used' }),
  open: z.boolean(),
  nextOpenAt: z.iso.datetime().nullable(),
});

const ConsentJson = z.object({
  outboundCall: z.boolean(),
  capturedAt: z.iso.datetime().nullable(),
  source: z.string().nullable(),
});

export const Contact = z
  .object({
    id: z.string(),
    campaignId: z.string(),
    phone: z.string().openapi({ description: 'E.164' }),
    name: z.string().nullable(),
    email: z.string().nullable(),
    channels: z.array(Channel),
    status: z.enum(CONTACT_STATUSES),
    attempts: z.number().int().openapi({ description: 'Dials placed so far' }),
    consent: ConsentJson.nullable(),
    compliance: z
      .object({
        checkedAt: z.iso.datetime(),
        consent: ConsentJson,
        doNotCall: z.object({ tenant: z.boolean(), platform: z.boolean() }),
        callingWindow: WindowCheck,
      })
      .nullable()
      .openapi({
        description:
          'The call channel’s compliance decision at ingest, kept as evidence; null without the call channel. Checked again at every dial',
      }),
    nextAttemptAt: z.iso.datetime().nullable(),
    lastCallId: z.string().nullable(),
    lastOutcome: z.string().nullable(),
    endReason: z.string().nullable().openapi({
      description: 'Why the contact stopped: `do_not_call`, `opted_out`, `max_attempts`, `call_failed`, …',
    }),
    sandbox: z.boolean(),
    externalId: z
      .string()
      .nullable()
      .openapi({ description: 'Your own id of the lead, when it came in a batch with one' }),
    createdAt: z.iso.datetime(),
    updatedAt: z.iso.datetime(),
    conversation: z.array(TranscriptTurn).nullable().openapi({
      description:
        'The last answered call’s transcript, on `GET /contacts/{id}`; null in lists, and before a call was answered',
    }),
    analysis: CallAnalysis.nullable().openapi({
      description:
        'The last answered call’s analysis (summary, sentiment, outcome, opt-out), on `GET /contacts/{id}`; null in lists, and before a call was answered',
    }),
  })
  .openapi('Contact');

export const ContactEnvelope = z.object({ contact: Contact });

export const FollowupCreate = z
  .strictObject({
    scheduledAt: z.iso
      .datetime({ offset: true, error: 'must be an ISO 8601 date-time' })
      .openapi({ description: 'In the future, within a year', example: '2026-11-25T15:00:00Z' }),
    channel: Channel.optional().openapi({
      description: 'One of the contact’s channels; default `call` when it has it',
    }),
    note: text(1_000).optional(),
  })
  .openapi('FollowupCreate');

export const Followup = z
  .object({
    id: z.string(),
    contactId: z.string(),
    scheduledAt: z.iso.datetime(),
    channel: Channel,
    note: z.string().nullable(),
    status: z
      .enum(['scheduled', 'done', 'cancelled', 'refused'])
      .openapi({ description: '`refused`: the checks at its time said no (do-not-call, consent)' }),
    createdAt: z.iso.datetime(),
  })
  .openapi('Followup');

// ---- Event routes and templates ----

export const EventRoute = z
  .object({ eventType: z.string(), campaignId: z.string(), createdAt: z.iso.datetime() })
  .openapi('EventRoute');
export const EventRouteCreate = z
  .strictObject({ eventType: EventType, campaignId: id('An API campaign of this tenant') })
  .openapi('EventRouteCreate');
export const EventRouteQuery = z.object({ eventType: EventType });

export const Template = z
  .object({
    id: z.string(),
    channel: MessageChannel,
    name: z.string(),
    language: z.string().nullable(),
    subject: z.string().nullable(),
    body: z.string(),
    variables: z
      .array(z.string())
      .openapi({ description: 'Placeholder names in order: `1`, `2` for WhatsApp; keys for email' }),
  })
  .openapi('OmniTemplate', {
    example: {
      id: '665f1c2b9d3e4a00123456d1',
      channel: 'email',
      name: 'Welcome',
      language: 'en',
      subject: 'Hello {{first_name}}',
      body: 'Hi {{first_name}}, …',
      variables: ['first_name'],
    },
  });

export const TemplatesQuery = z.object({ channel: MessageChannel.optional() });

// ---- Operator ----

const HHMM = z.string().regex(/^([01][0-9]|2[0-3]):[0-5][0-9]$|^24:00$/, 'must be HH:MM');

export const CampaignCreate = z
  .strictObject({
    name: name(200),
    type: z.literal('api').optional().openapi({ description: 'Only `api` (CSV campaigns are the dashboard’s)' }),
    channels: z
      .array(Channel)
      .min(1)
      .refine((c) => new Set(c).size === c.length, 'each channel at most once')
      .optional()
      .openapi({ description: 'Default: every channel' }),
    agentName: name(200).optional(),
    fromNumber: z
      .string()
      .regex(/^\+[1-9]\d{6,14}$/, 'must be an E.164 number, e.g. +14155550100')
      .optional()
      .openapi({
        description:
          'A number the tenant owns (422 `phone_not_owned` otherwise) that the campaign’s calls are placed from. Default: a platform number',
        example: '+14155550100',
      }),
    callingWindow: z
      .strictObject({
        start: HHMM,
        end: HHMM,
        days: z
          .array(z.enum(WEEKDAYS))
          .min(1)
          .refine((d) => new Set(d).size === d.length, 'each day at most once')
          .optional(),
      })
      .optional()
      .openapi({
        description:
          'Local times in the called party’s zone, start before end. Default: `CALLING_WINDOW_DEFAULT` (08:00–21:00)',
      }),
    maxCallSeconds: z
      .number()
      .int()
      .min(10)
      .max(3600)
      .optional()
      .openapi({ description: 'Default 600; a call ends when it reaches it, and its hold covers it' }),
    maxAttempts: z
      .number()
      .int()
      .min(1)
      .max(10)
      .optional()
      .openapi({ description: 'Dials per contact, retries of no-answer and busy included. Default 3' }),
    retryAfterMinutes: z
      .number()
      .int()
      .min(1)
      .max(10_080)
      .optional()
      .openapi({ description: 'Between a no-answer or busy and the next dial. Default 60' }),
  })
  .openapi('CampaignCreate');

export const TemplateCreate = z
  .strictObject({
    channel: MessageChannel,
    name: name(200),
    subject: text(500).optional().openapi({ description: 'Email only' }),
    body: text(10_000).refine((b) => b.trim().length > 0, 'must not be empty'),
    language: z
      .string()
      .regex(/^[A-Za-z]{2,3}([_-][A-Za-z0-9]{2,8})*$/, 'must be a language tag like en or pt_BR')
      .optional(),
  })
  .openapi('OmniTemplateCreate');

export const PhoneBody = z.strictObject({ phone: leadFields.phone }).openapi('DoNotCallCreate');

export const DoNotCallEntry = z
  .object({ phone: z.string(), list: z.enum(['tenant', 'platform']), source: z.string(), createdAt: z.iso.datetime() })
  .openapi('DoNotCallEntry');

export const MessagesQuery = z.object({ channel: MessageChannel.optional() });

export const Message = z
  .object({
    id: z.string(),
    contactId: z.string(),
    channel: MessageChannel,
    to: z.string(),
    subject: z.string().nullable(),
    body: z.string(),
    status: z.enum(['queued', 'sent']),
    createdAt: z.iso.datetime(),
  })
  .openapi('Message');

export { ISO };
