import type { voiceapi } from '@voiceapi/proto';
import type { z } from '../../http/zod';
import { conversationJson } from '../telephony/mappers';
import type {
  BatchLeadResult,
  Campaign,
  CampaignCreate,
  CallingWindow,
  Contact,
  DoNotCallEntry,
  EventRoute,
  Followup,
  Lead,
  LeadAccepted,
  LeadEvent,
  Message,
  Template,
} from './schemas';

/** The leads service's messages ↔ the JSON of schemas.ts. */

type L = typeof voiceapi.leads.v1;
type Proto<K extends keyof L> = L[K] extends { decode(...a: never[]): infer T } ? T : never;
type Json<S extends z.ZodType> = z.infer<S>;

const iso = (d: Date | undefined): string => (d ?? new Date(0)).toISOString();
const isoOrNull = (d: Date | undefined): string | null => (d ? d.toISOString() : null);

/** A lead (or an event's lead) → the service's input: one channel list, WhatsApp values keyed "1", "2", … */
export function leadInput(
  body: Omit<Json<typeof Lead>, 'campaignId'> | Omit<Json<typeof LeadEvent>, 'eventType'>,
): Proto<'LeadInput'> {
  const channels = body.channels ?? [body.channel ?? 'call'];
  const params = body.whatsappParams;
  const whatsappParams = Array.isArray(params)
    ? Object.fromEntries(params.map((v, i) => [String(i + 1), v]))
    : (params ?? {});
  return {
    phone: body.phone,
    ...(body.name !== undefined && { name: body.name }),
    ...(body.email !== undefined && { email: body.email }),
    channels,
    ...(body.consent && {
      consent: {
        outboundCall: body.consent.outboundCall,
        ...(body.consent.capturedAt !== undefined && { capturedAt: new Date(body.consent.capturedAt) }),
        ...(body.consent.source !== undefined && { source: body.consent.source }),
      },
    }),
    templateVariables: body.templateVariables ?? {},
    whatsappParams,
    ...(body.whatsappTemplateId !== undefined && { whatsappTemplateId: body.whatsappTemplateId }),
    ...(body.emailTemplateId !== undefined && { emailTemplateId: body.emailTemplateId }),
  };
}

export function leadAcceptedJson(res: { status: string; contact?: Proto<'Contact'> }): Json<typeof LeadAccepted> {
  const c = need(res.contact, 'contact');
  return {
    status: res.status as Json<typeof LeadAccepted>['status'],
    contactId: c.id,
    campaignId: c.campaignId,
    channels: c.channels as Json<typeof LeadAccepted>['channels'],
    contactStatus: c.status as Json<typeof LeadAccepted>['contactStatus'],
    nextAttemptAt: isoOrNull(c.nextAttemptTime),
  };
}

function windowJson(w: Proto<'CallingWindow'> | undefined): Json<typeof CallingWindow> {
  if (!w || w.always) return { always: true, start: null, end: null, days: [] };
  return { always: false, start: w.start, end: w.end, days: w.days as Json<typeof CallingWindow>['days'] };
}

export function campaignJson(c: Proto<'Campaign'> | undefined): Json<typeof Campaign> {
  const x = need(c, 'campaign');
  return {
    id: x.id,
    name: x.name,
    type: x.type as Json<typeof Campaign>['type'],
    status: x.status as Json<typeof Campaign>['status'],
    channels: x.channels as Json<typeof Campaign>['channels'],
    agentName: x.agentName ?? null,
    fromNumber: x.fromNumber ?? null,
    callingWindow: windowJson(x.callingWindow),
    maxCallSeconds: x.maxCallSeconds,
    maxAttempts: x.maxAttempts,
    retryAfterMinutes: x.retryAfterMinutes,
    stats: x.stats ?? { contacts: 0, queued: 0, completed: 0, failed: 0 },
    createdAt: iso(x.createTime),
    updatedAt: iso(x.updateTime),
  };
}

export function campaignCreateRequest(b: Json<typeof CampaignCreate>): Proto<'CreateCampaignRequest'> {
  return {
    name: b.name,
    type: b.type ?? 'api',
    channels: b.channels ?? [],
    ...(b.agentName !== undefined && { agentName: b.agentName }),
    ...(b.fromNumber !== undefined && { fromNumber: b.fromNumber }),
    ...(b.callingWindow && {
      callingWindow: {
        start: b.callingWindow.start,
        end: b.callingWindow.end,
        days: b.callingWindow.days ?? [],
        always: false,
      },
    }),
    ...(b.maxCallSeconds !== undefined && { maxCallSeconds: b.maxCallSeconds }),
    ...(b.maxAttempts !== undefined && { maxAttempts: b.maxAttempts }),
    ...(b.retryAfterMinutes !== undefined && { retryAfterMinutes: b.retryAfterMinutes }),
  };
}

function consentJson(c: Proto<'Consent'>) {
  return { outboundCall: c.outboundCall, capturedAt: isoOrNull(c.capturedAt), source: c.source ?? null };
}

/** A contact; with its last call's conversation when it was read (GET /contacts/{id}). */
export function contactJson(
  c: Proto<'Contact'> | undefined,
  last?: ReturnType<typeof conversationJson>,
): Json<typeof Contact> {
  const x = need(c, 'contact');
  const comp = x.compliance;
  const w = comp?.callingWindow;
  return {
    id: x.id,
    campaignId: x.campaignId,
    phone: x.phone,
    name: x.name ?? null,
    email: x.email ?? null,
    channels: x.channels as Json<typeof Contact>['channels'],
    status: x.status as Json<typeof Contact>['status'],
    attempts: x.attempts,
    consent: x.consent ? consentJson(x.consent) : null,
    compliance: comp
      ? {
          checkedAt: iso(comp.checkTime),
          consent: consentJson(comp.consent ?? { outboundCall: false }),
          doNotCall: { tenant: comp.doNotCallTenant, platform: comp.doNotCallPlatform },
          callingWindow: {
            window: windowJson(w?.window),
            timeZones: w?.timeZones ?? [],
            timeZoneSource: (w?.timeZoneSource || 'number') as 'number' | 'fallback',
            open: w?.open ?? false,
            nextOpenAt: isoOrNull(w?.nextOpenTime),
          },
        }
      : null,
    nextAttemptAt: isoOrNull(x.nextAttemptTime),
    lastCallId: x.lastCallId ?? null,
    lastOutcome: x.lastOutcome ?? null,
    endReason: x.endReason ?? null,
    sandbox: x.sandbox,
    externalId: x.externalId ?? null,
    createdAt: iso(x.createTime),
    updatedAt: iso(x.updateTime),
    conversation: last && last.transcript.length > 0 ? last.transcript : null,
    analysis: last?.analysis ?? null,
  };
}

export function followupJson(f: Proto<'Followup'> | undefined): Json<typeof Followup> {
  const x = need(f, 'follow-up');
  return {
    id: x.id,
    contactId: x.contactId,
    scheduledAt: iso(x.scheduledTime),
    channel: x.channel as Json<typeof Followup>['channel'],
    note: x.note ?? null,
    status: x.status as Json<typeof Followup>['status'],
    createdAt: iso(x.createTime),
  };
}

export const routeJson = (r: Proto<'EventRoute'>): Json<typeof EventRoute> => ({
  eventType: r.eventType,
  campaignId: r.campaignId,
  createdAt: iso(r.createTime),
});

export function templateJson(t: Proto<'Template'>): Json<typeof Template> {
  return {
    id: t.id,
    channel: t.channel as Json<typeof Template>['channel'],
    name: t.name,
    language: t.language ?? null,
    subject: t.subject ?? null,
    body: t.body,
    variables: t.variables,
  };
}

export function dncJson(e: Proto<'DoNotCallEntry'> | undefined): Json<typeof DoNotCallEntry> {
  const x = need(e, 'do-not-call entry');
  return { phone: x.phone, list: x.list as 'tenant' | 'platform', source: x.source, createdAt: iso(x.createTime) };
}

export function messageJson(m: Proto<'Message'>): Json<typeof Message> {
  return {
    id: m.id,
    contactId: m.contactId,
    channel: m.channel as Json<typeof Message>['channel'],
    to: m.to,
    subject: m.subject ?? null,
    body: m.body,
    status: m.status as Json<typeof Message>['status'],
    createdAt: iso(m.createTime),
  };
}

function need<T>(v: T | undefined, what: string): T {
  if (v === undefined) throw new Error(`leads service answered without a ${what}`);
  return v;
}

/** A lead's result from the leads service → its JSON, field problems named from the request body. */
export function batchResultJson(
  r: Proto<'BatchLeadResult'>,
  externalId: string | undefined,
): Json<typeof BatchLeadResult> {
  const base = { index: r.index, ...(externalId !== undefined && { externalId }) };
  if (r.status === 'refused') {
    return {
      ...base,
      status: 'refused',
      reasonCode: r.reasonCode ?? 'internal_error',
      error: r.error ?? '',
      ...(r.details.length > 0 && {
        details: r.details.map((d) => ({ path: `body.leads.${r.index}.${d.path}`, message: d.message })),
      }),
    };
  }
  const c = need(r.contact, 'contact');
  return {
    ...base,
    status: r.status as Json<typeof BatchLeadResult>['status'],
    contactId: c.id,
    ...(r.status === 'scheduled' &&
      c.compliance?.callingWindow?.nextOpenTime && {
        nextAttemptAt: c.compliance.callingWindow.nextOpenTime.toISOString(),
      }),
    ...(r.duplicate && { duplicate: true }),
  };
}
