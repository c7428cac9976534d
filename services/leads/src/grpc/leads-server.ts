// Over 300 lines because it maps every RPC of the leads contract to its use case, one handler each.
import { registerService, requireTenant, type ServiceRegistration, pageAsked } from '@voiceapi/kit/grpc';
import { type Logger } from '@voiceapi/kit/service';
import { voiceapi } from '@voiceapi/proto';
import type { Weekday, WindowSetting } from '../domain/calling-window';
import type { Compliance, Consent, Contact } from '../domain/contact';
import type { DoNotCallEntry } from '../domain/do-not-call';
import type { EventRoute } from '../domain/event-route';
import type { Followup } from '../domain/followup';
import type { Message } from '../domain/message';
import type { Template } from '../domain/template';
import type { CampaignWithStats, Campaigns } from '../usecases/campaigns';
import type { Contacts } from '../usecases/contacts';
import type { Dialing } from '../usecases/dialing';
import type { DoNotCall } from '../usecases/do-not-call';
import type { EventRoutes } from '../usecases/event-routes';
import type { LeadIngest, LeadInput } from '../usecases/leads';
import type { Messaging } from '../usecases/messaging';
import type { Templates } from '../usecases/templates';

type P = typeof voiceapi.leads.v1;
type Proto<K extends keyof P> = P[K] extends { decode(...a: never[]): infer T } ? T : never;

export interface LeadsUseCases {
  campaigns: Campaigns;
  ingest: LeadIngest;
  contacts: Contacts;
  routes: EventRoutes;
  templates: Templates;
  doNotCall: DoNotCall;
  messaging: Messaging;
  dialing: Dialing;
}

const page = (p: { page: number; limit: number; total: number; hasMore: boolean }) => ({
  page: p.page,
  limit: p.limit,
  total: p.total,
  hasMore: p.hasMore,
});

/** gRPC adapter: maps messages to use-case calls and domain objects back, nothing more. */
export function leadsService(uc: LeadsUseCases, log: Logger): ServiceRegistration {
  return registerService(
    'voiceapi.leads.v1.LeadsService',
    voiceapi.leads.v1.LeadsServiceService,
    {
      listCampaigns: async (req, ctx) => {
        const res = await uc.campaigns.list(requireTenant(ctx), pageAsked(req.page));
        return { campaigns: res.items.map(campaignProto), page: page(res) };
      },
      getCampaign: async (req, ctx) => ({
        campaign: campaignProto(await uc.campaigns.get(requireTenant(ctx), req.id)),
      }),
      listCampaignContacts: async (req, ctx) => {
        const res = await uc.campaigns.contactsOf(requireTenant(ctx), req.campaignId, pageAsked(req.page));
        return { contacts: res.items.map(contactProto), page: page(res) };
      },
      createCampaign: async (req, ctx) => ({
        campaign: campaignProto(
          await uc.campaigns.create(requireTenant(ctx), {
            name: req.name,
            type: req.type,
            channels: req.channels,
            ...(req.agentName !== undefined && { agentName: req.agentName }),
            ...(req.fromNumber !== undefined && { fromNumber: req.fromNumber }),
            ...(req.callingWindow && { callingWindow: windowFromProto(req.callingWindow) }),
            ...(req.maxCallSeconds !== undefined && { maxCallSeconds: req.maxCallSeconds }),
            ...(req.maxAttempts !== undefined && { maxAttempts: req.maxAttempts }),
            ...(req.retryAfterMinutes !== undefined && { retryAfterMinutes: req.retryAfterMinutes }),
          }),
        ),
      }),
      startCampaign: async (req, ctx) => ({
        campaign: campaignProto(await uc.campaigns.start(requireTenant(ctx), req.id)),
      }),
      ingestLead: async (req, ctx) => {
        const r = await uc.ingest.ingest(requireTenant(ctx), req.campaignId, leadFromProto(req.lead), ctx.operationId);
        return { status: r.status, contact: contactProto(r.contact) };
      },
      ingestLeadBatch: async (req, ctx) => {
        const leads = req.leads.map((l) => ({
          index: l.index,
          campaignId: l.campaignId,
          ...(l.externalId !== undefined && { externalId: l.externalId }),
          lead: leadFromProto(l.lead),
        }));
        const results = await uc.ingest.ingestBatch(requireTenant(ctx), req.batchKey, leads);
        return {
          results: results.map((r) =>
            r.status === 'refused'
              ? {
                  index: r.index,
                  status: r.status,
                  duplicate: false,
                  reasonCode: r.reasonCode,
                  error: r.error,
                  details: r.details ?? [],
                }
              : {
                  index: r.index,
                  status: r.status,
                  contact: contactProto(r.contact),
                  duplicate: r.duplicate,
                  details: [],
                },
          ),
        };
      },
      ingestEvent: async (req, ctx) => {
        const r = await uc.ingest.ingestEvent(
          requireTenant(ctx),
          req.eventType,
          leadFromProto(req.lead),
          ctx.operationId,
        );
        return { status: r.status, contact: contactProto(r.contact) };
      },
      getContact: async (req, ctx) => ({ contact: contactProto(await uc.contacts.get(requireTenant(ctx), req.id)) }),
      deleteContact: async (req, ctx) => {
        await uc.contacts.delete(requireTenant(ctx), req.id);
        return {};
      },
      cancelContact: async (req, ctx) => ({
        contact: contactProto(await uc.contacts.cancel(requireTenant(ctx), req.id)),
      }),
      createFollowup: async (req, ctx) => ({
        followup: followupProto(
          await uc.contacts.followUp(requireTenant(ctx), req.contactId, {
            scheduledAt: req.scheduledTime ?? new Date(NaN),
            ...(req.channel !== undefined && { channel: req.channel }),
            ...(req.note !== undefined && { note: req.note }),
          }),
        ),
      }),
      listEventRoutes: async (_req, ctx) => ({ routes: (await uc.routes.list(requireTenant(ctx))).map(routeProto) }),
      putEventRoute: async (req, ctx) => ({
        route: routeProto(await uc.routes.put(requireTenant(ctx), req.eventType, req.campaignId)),
      }),
      deleteEventRoute: async (req, ctx) => {
        await uc.routes.delete(requireTenant(ctx), req.eventType);
        return {};
      },
      listTemplates: async (req, ctx) => ({
        templates: (await uc.templates.list(requireTenant(ctx), req.channel || undefined)).map(templateProto),
      }),
      createTemplate: async (req, ctx) => ({
        template: templateProto(
          await uc.templates.create(requireTenant(ctx), {
            channel: req.channel,
            name: req.name,
            body: req.body,
            ...(req.subject !== undefined && { subject: req.subject }),
            ...(req.language !== undefined && { language: req.language }),
          }),
        ),
      }),
      addTenantDoNotCall: async (req, ctx) => {
        const r = await uc.doNotCall.addTenant(requireTenant(ctx), req.phone);
        return { entry: dncProto(r.entry), created: r.created };
      },
      addPlatformDoNotCall: async (req) => {
        const r = await uc.doNotCall.addPlatform(req.phone);
        return { entry: dncProto(r.entry), created: r.created };
      },
      listMessages: async (req, ctx) => ({
        messages: (await uc.messaging.list(requireTenant(ctx), req.channel || undefined, req.limit)).map(messageProto),
      }),
      claimDial: async (req, ctx) => {
        const r = await uc.dialing.claim(requireTenant(ctx), req.contactId, req.dialId);
        if (r.allowed) {
          return {
            allowed: true,
            phone: r.contact.phone,
            maxCallSeconds: r.campaign.maxCallSeconds,
            campaignId: r.campaign.id,
            ...(r.campaign.agentName !== undefined && { agentName: r.campaign.agentName }),
            ...(r.campaign.fromNumber !== undefined && { fromNumber: r.campaign.fromNumber }),
          };
        }
        return {
          allowed: false,
          refusal: r.refusal,
          phone: '',
          maxCallSeconds: 0,
          campaignId: r.contact?.campaignId ?? '',
          ...(r.nextAttemptAt && { nextAttemptTime: r.nextAttemptAt }),
        };
      },
    },
    log,
  );
}

function windowProto(w: WindowSetting): Proto<'CallingWindow'> {
  return w === 'always'
    ? { start: '', end: '', days: [], always: true }
    : { start: w.start, end: w.end, days: w.days ? [...w.days] : [], always: false };
}

function windowFromProto(w: Proto<'CallingWindow'>): WindowSetting {
  return w.always ? 'always' : { start: w.start, end: w.end, ...(w.days.length > 0 && { days: w.days as Weekday[] }) };
}

export function campaignProto(c: CampaignWithStats): Proto<'Campaign'> {
  return {
    id: c.id,
    name: c.name,
    type: c.type,
    status: c.status,
    channels: c.channels,
    ...(c.agentName !== undefined && { agentName: c.agentName }),
    ...(c.fromNumber !== undefined && { fromNumber: c.fromNumber }),
    callingWindow: windowProto(c.callingWindow),
    maxCallSeconds: c.maxCallSeconds,
    maxAttempts: c.maxAttempts,
    retryAfterMinutes: c.retryAfterMinutes,
    stats: c.stats,
    createTime: c.createdAt,
    updateTime: c.updatedAt,
  };
}

function consentProto(c: Consent): Proto<'Consent'> {
  return {
    outboundCall: c.outboundCall,
    ...(c.capturedAt && { capturedAt: c.capturedAt }),
    ...(c.source !== undefined && { source: c.source }),
  };
}

function complianceProto(c: Compliance): Proto<'Compliance'> {
  const w = c.callingWindow;
  return {
    checkTime: c.checkedAt,
    consent: consentProto(c.consent),
    doNotCallTenant: c.doNotCall.tenant,
    doNotCallPlatform: c.doNotCall.platform,
    callingWindow: {
      window: windowProto(w.window),
      timeZones: w.timeZones,
      timeZoneSource: w.timeZoneSource,
      open: w.open,
      ...(w.nextOpenAt && { nextOpenTime: w.nextOpenAt }),
    },
  };
}

export function contactProto(c: Contact): Proto<'Contact'> {
  return {
    id: c.id,
    campaignId: c.campaignId,
    phone: c.phone,
    ...(c.name !== undefined && { name: c.name }),
    ...(c.email !== undefined && { email: c.email }),
    channels: c.channels,
    status: c.status,
    attempts: c.attempts,
    ...(c.consent && { consent: consentProto(c.consent) }),
    ...(c.compliance && { compliance: complianceProto(c.compliance) }),
    ...(c.nextAttemptAt && { nextAttemptTime: c.nextAttemptAt }),
    createTime: c.createdAt,
    updateTime: c.updatedAt,
    ...(c.lastCallId !== undefined && { lastCallId: c.lastCallId }),
    ...(c.lastOutcome !== undefined && { lastOutcome: c.lastOutcome }),
    sandbox: c.sandbox,
    ...(c.endReason !== undefined && { endReason: c.endReason }),
    ...(c.externalId !== undefined && { externalId: c.externalId }),
  };
}

function leadFromProto(l: Proto<'LeadInput'> | undefined): LeadInput {
  if (!l) return { phone: '', channels: [], templateVariables: {}, whatsappParams: {} };
  return {
    phone: l.phone,
    ...(l.name !== undefined && { name: l.name }),
    ...(l.email !== undefined && { email: l.email }),
    channels: l.channels,
    ...(l.consent && {
      consent: {
        outboundCall: l.consent.outboundCall,
        ...(l.consent.capturedAt && { capturedAt: l.consent.capturedAt }),
        ...(l.consent.source !== undefined && { source: l.consent.source }),
      },
    }),
    templateVariables: { ...l.templateVariables },
    whatsappParams: { ...l.whatsappParams },
    ...(l.whatsappTemplateId !== undefined && { whatsappTemplateId: l.whatsappTemplateId }),
    ...(l.emailTemplateId !== undefined && { emailTemplateId: l.emailTemplateId }),
  };
}

function followupProto(f: Followup): Proto<'Followup'> {
  return {
    id: f.id,
    contactId: f.contactId,
    scheduledTime: f.scheduledAt,
    channel: f.channel,
    ...(f.note !== undefined && { note: f.note }),
    status: f.status,
    createTime: f.createdAt,
  };
}

function routeProto(r: EventRoute): Proto<'EventRoute'> {
  return { eventType: r.eventType, campaignId: r.campaignId, createTime: r.createdAt };
}

function templateProto(t: Template): Proto<'Template'> {
  return {
    id: t.id,
    channel: t.channel,
    name: t.name,
    ...(t.language !== undefined && { language: t.language }),
    ...(t.subject !== undefined && { subject: t.subject }),
    body: t.body,
    variables: t.variables,
    createTime: t.createdAt,
  };
}

function dncProto(e: DoNotCallEntry): Proto<'DoNotCallEntry'> {
  return { phone: e.phone, list: e.list, createTime: e.createdAt, source: e.source };
}

function messageProto(m: Message): Proto<'Message'> {
  return {
    id: m.id,
    contactId: m.contactId,
    channel: m.channel,
    to: m.to,
    ...(m.subject !== undefined && { subject: m.subject }),
    body: m.body,
    status: m.status,
    createTime: m.createdAt,
    templateId: m.templateId,
  };
}
