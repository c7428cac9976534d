import { PageQuery } from '../../http/pagination';
import { mayGrow, queryInt, PLAIN_INTEGER, z } from '../../http/zod';

/** The HTTP shapes of calls, recordings, analytics and numbers (spec "Unified call summary"; decisions file, "Endpoint shapes"). */

export const DIRECTIONS = ['inbound', 'outbound'] as const;
export const CALL_STATUSES = ['queued', 'ringing', 'in_progress', 'completed', 'busy', 'no_answer', 'failed'] as const;
export const OUTCOMES = ['completed', 'no_answer', 'busy', 'failed', 'voicemail'] as const;
export const BILLING_STATUSES = ['pending', 'charged', 'failed', 'skipped'] as const;
export const GROUP_BY = ['day', 'agent', 'campaign'] as const;

const ISO_EXAMPLE = '2026-11-22T09:30:00.000Z';
const dateTime = (what: string) =>
  z.iso
    .datetime({ offset: true, error: 'must be an ISO 8601 date-time' })
    .openapi({ description: what, example: ISO_EXAMPLE });
const filterId = (what: string) => z.string().min(1).max(200).openapi({ description: what });
export const E164 = z
  .string()
  .regex(/^\+[1-9]\d{6,14}$/, 'must be an E.164 number, e.g. +14155550100')
  .openapi({
    description: 'E.164: a plus, the country code and the number, at most 15 digits',
    example: '+14155550100',
  });
const nullableString = (description?: string) =>
  z
    .string()
    .nullable()
    .openapi(description ? { description } : {});

export const CallSummary = z
  .object({
    id: z.string(),
    direction: z.enum(DIRECTIONS),
    callId: nullableString('The call’s id (the same as `id`)'),
    callSessionId: nullableString('Outbound: the dial request this call placed (`<contactId>:<attempt>`)'),
    callSid: nullableString('The carrier’s id of the call'),
    status: z.enum(CALL_STATUSES).nullable().openapi({
      description:
        '`queued`, `ringing`, `in_progress` (an inbound call once answered; an outbound call reads `ringing` until it ends, its answer shown on `GET /calls/stream` and in webhooks), then `completed`, `busy`, `no_answer` or `failed`',
    }),
    outcome: mayGrow(
      z.enum(OUTCOMES).nullable(),
      'Once ended: `completed`, `no_answer`, `busy`, `failed` or `voicemail`',
      '`failed`',
    ),
    startedAt: nullableString('When the call was placed (outbound) or rang (inbound)'),
    endedAt: nullableString(),
    durationSeconds: z.number().int().openapi({
      description: 'Talk time as the carrier reports it (simulated time with the simulator), never wall time',
    }),
    fromNumber: nullableString(),
    toNumber: nullableString(),
    agentId: nullableString(
      'Inbound: the agent that answered (the number’s active agent when the call rang); null for the platform’s default answering',
    ),
    agentName: nullableString('Its name when the call rang; outbound: the campaign’s agent name'),
    campaignId: nullableString(),
    contactId: nullableString(),
    billingStatus: z.enum(BILLING_STATUSES).openapi({
      description: '`pending` right after the end, then `charged`, `failed` or `skipped` (sandbox, 0 s, free)',
    }),
    creditsCharged: z.number().int().nullable().openapi({ description: 'From the ledger row; null while pending' }),
    creditsError: nullableString('Why the call was not charged, e.g. `insufficient_credits`'),
    balanceAfter: z
      .number()
      .int()
      .nullable()
      .openapi({ description: 'The wallet’s balance after the call’s ledger row' }),
    hasTranscript: z.boolean(),
    hasAnalysis: z.boolean(),
    hasRecording: z.boolean(),
    summary: nullableString(
      'What the conversation came to. An agent’s call names the appointment booked (`Appointment booked with <doctor> at <start> (appointment <id>).`), or why none was, and ends with the custom-API steps that failed (`Failed: crm_lookup (<why>); …`)',
    ),
  })
  .openapi('CallSummary');

export const TranscriptTurn = z
  .object({ role: z.enum(['agent', 'caller']), text: z.string(), at: z.string() })
  .openapi('TranscriptTurn');
export const CallAnalysis = z
  .object({
    summary: z.string(),
    sentiment: z.enum(['positive', 'neutral', 'negative']),
    outcome: z.string(),
    optOut: z.boolean(),
  })
  .openapi('CallAnalysis');
export const CallDetail = CallSummary.extend({
  transcript: z.array(TranscriptTurn),
  analysis: CallAnalysis.nullable(),
}).openapi('CallDetail');

/** Strict: an unknown parameter (`status[$ne]`, `limit[0]`) is refused, never ignored. */
export const CallsQuery = z
  .strictObject({
    ...PageQuery.shape,
    direction: z.enum(DIRECTIONS).optional(),
    status: z.enum(CALL_STATUSES).optional(),
    agentId: filterId('Calls answered by this agent').optional(),
    campaignId: filterId('Calls of this campaign').optional(),
    startedAfter: dateTime('Calls started at or after this instant').optional(),
    startedBefore: dateTime('Calls started at or before this instant').optional(),
  })
  .refine((q) => !q.startedAfter || !q.startedBefore || Date.parse(q.startedAfter) <= Date.parse(q.startedBefore), {
    path: ['startedAfter'],
    message: 'must not be later than startedBefore',
  });

export const ContactCallsQuery = z.strictObject(PageQuery.shape);

export const CallStreamQuery = z.strictObject({
  direction: z.enum(DIRECTIONS).optional(),
  campaignId: filterId('Only the calls of this campaign').optional(),
  agentId: filterId('Only the calls of this agent').optional(),
});

export const CallStreamHeaders = z.object({
  'Last-Event-ID': z.string().max(64).optional().openapi({
    description:
      'The `id` of the last event received: the stream goes on right after it (EventSource sends it by itself when it reconnects). Without it: from now on',
    example: '1042-mfx2k9a1',
  }),
});

export const ContactCallParams = z.object({
  id: z
    .string()
    .regex(/^[a-fA-F0-9]{24}$/, 'must be a 24-character hex id')
    .openapi({ example: '665f1c2b9d3e4a0012345678' }),
  callId: z
    .string()
    .regex(/^call_[a-f0-9]{24}$/, 'must be a call id')
    .openapi({ example: 'call_0123456789abcdef01234567' }),
});
export const CallIdParam = z.object({ id: ContactCallParams.shape.callId });
// Only the characters a token can have; whether it is one (signed, whole, unexpired) is telephony's to say (403/410).
export const RecordingToken = z.object({
  token: z
    .string()
    .min(1)
    .max(1_000)
    .regex(/^[A-Za-z0-9_.-]+$/, 'is not a recording token'),
});
export const RecordingLink = z
  .object({
    url: z.string().openapi({
      description: 'Signed address under `/api/v1/recordings/`; needs no key',
      example: 'https://api.example.com/api/v1/recordings/eyJ0Ijo.iOiJ',
    }),
    expiresAt: z.string(),
  })
  .openapi('RecordingLink');

const MAX_RANGE_DAYS = 366;
export const AnalyticsQuery = z
  .strictObject({
    groupBy: z.enum(GROUP_BY).openapi({ description: '`day` (in `timezone`, UTC by default), `agent` or `campaign`' }),
    from: dateTime('Start of the range (default: 30 days before `to`)').optional(),
    to: dateTime('End of the range (default: now)').optional(),
    direction: z.enum(DIRECTIONS).optional(),
    timezone: z
      .string()
      .max(64)
      .refine((tz) => {
        try {
          new Intl.DateTimeFormat('en', { timeZone: tz });
          return true;
        } catch {
          return false;
        }
      }, 'must be an IANA time zone, e.g. Europe/Berlin')
      .optional()
      .openapi({ description: 'IANA time zone of the day buckets', example: 'America/New_York' }),
  })
  .refine((q) => !q.from || !q.to || Date.parse(q.from) < Date.parse(q.to), {
    path: ['from'],
    message: 'must be before to',
  })
  .refine((q) => !q.from || !q.to || Date.parse(q.to) - Date.parse(q.from) <= MAX_RANGE_DAYS * 86_400_000, {
    path: ['from'],
    message: `the range is at most ${MAX_RANGE_DAYS} days`,
  });

export const AnalyticsBucket = z
  .object({
    key: z.string().nullable().openapi({
      description: 'The day (`YYYY-MM-DD`), agent id or campaign id; null for calls without an agent or campaign',
    }),
    calls: z.number().int(),
    completed: z.number().int(),
    durationSeconds: z.number().int(),
    avgDurationSeconds: z.number(),
    creditsCharged: z.number().int(),
  })
  .openapi('AnalyticsBucket');

export const PhoneNumber = z
  .object({
    id: z.string(),
    phoneNumber: z.string(),
    countryIso: z.string(),
    status: z.enum(['active', 'available']),
    agentId: z.string().nullable(),
    purchasedAt: z.string().nullable(),
    monthlyCredits: z.number().int(),
  })
  .openapi('PhoneNumber');

export const AvailableQuery = z.strictObject({
  countryIso: z
    .string()
    .regex(/^[A-Z]{2}$/, 'must be two capital letters (ISO 3166-1 alpha-2)')
    .optional()
    .openapi({ example: 'US' }),
  contains: z
    .string()
    .regex(/^\d{1,15}$/, 'must be 1–15 digits')
    .optional()
    .openapi({ example: '555' }),
  limit: queryInt(1, 100)
    .default(50)
    .openapi({ description: `At most this many, 1 to 100; ${PLAIN_INTEGER}` }),
});
export const Purchase = z.strictObject({ phoneNumber: E164 });
export const Purchased = z.object({
  number: PhoneNumber,
  creditsCharged: z.number().int(),
  balanceAfter: z.number().int(),
});
export const SandboxAccepted = z.object({ status: z.literal('sandbox_accepted') });

// ---- Operator ----
export const PoolNumber = z.strictObject({
  phoneNumber: E164,
  countryIso: z.string().regex(/^[A-Z]{2}$/, 'must be two capital letters (ISO 3166-1 alpha-2)'),
  monthlyCredits: z
    .number()
    .int()
    .min(0)
    .max(1_000_000)
    .openapi({ description: 'Credits a purchase debits (the first month)' }),
});
export const AssignedNumber = PoolNumber.omit({ monthlyCredits: true });
export const Concurrency = z.strictObject({
  maxConcurrentCalls: z
    .number()
    .int()
    .min(1)
    .max(1_000)
    .openapi({ description: 'Calls in progress at once (default 10)' }),
});
export const InboundSimulation = z.strictObject({
  toNumber: E164.openapi({ description: 'A number the tenant owns' }),
  fromNumber: E164,
  durationSeconds: z.number().int().min(0).max(3_600).optional().openapi({
    description: 'Talk time to simulate, 0–3600 s (0: nobody answered); default: chosen by a hash of `fromNumber`',
  }),
});
