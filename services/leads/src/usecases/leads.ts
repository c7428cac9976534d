// Over 300 lines because ingest applies the documented rules in order, each with its error; split, the order scatters.
import { DomainError, validationError, type ErrorDetail } from '@voiceapi/kit/errors';
import { type TenantScope } from '@voiceapi/kit/grpc';
import { type TypedCounter } from '@voiceapi/kit/metrics';
import { LRUCache } from 'lru-cache';
import { parsePhone, type ParsedPhone } from '../domain/phone';
import { render, whatsappValues } from '../domain/templates';
import {
  isChannel,
  MESSAGE_CHANNELS,
  type Campaign,
  type Channel,
  type Compliance,
  type Consent,
  type Contact,
  type MessageChannel,
  type MessageInputs,
} from '../domain/contact';
import { leadsReasons } from '../reasons';
import type { CampaignStore } from '../store/campaign-store';
import type { ContactStore } from '../store/contact-store';
import type { EventRouteStore } from '../store/event-route-store';
import type { MessageStore } from '../store/message-store';
import type { Message } from '../domain/message';
import type { TemplateStore } from '../store/template-store';
import type { Template } from '../domain/template';
import type { AcceptWriter } from './accept-writer';
import { doNotCallDetails, type ComplianceChecks } from './compliance';
import type { CreditCheck, LeadEvent } from './ports';

/** A lead as the gateway hands it over (shapes checked there; the rules are here). */
export interface LeadInput {
  phone: string;
  name?: string;
  email?: string;
  channels: string[];
  consent?: Consent;
  templateVariables: Record<string, string>;
  whatsappParams: Record<string, string>;
  whatsappTemplateId?: string;
  emailTemplateId?: string;
}

const RUNNING_CAMPAIGN_MS = 5_000;

/** How far in the future a consent's capture time may lie (clock skew between CRM and us). */
const CAPTURE_SKEW_MS = 60_000;

export interface IngestResult {
  status: 'accepted' | 'sandbox_accepted';
  contact: Contact;
  /** A try of the same ingest stored the contact first: it is answered as stored then. */
  storedBefore: boolean;
}

/** One lead of `POST /leads/batch`. */
export interface BatchLead {
  index: number;
  campaignId: string;
  externalId?: string;
  lead: LeadInput;
}

/** A batch lead's result: its contact, or why it was refused (as the error of `POST /leads` would say). */
export type BatchOutcome =
  | { index: number; status: 'accepted' | 'scheduled' | 'sandbox_accepted'; contact: Contact; duplicate: boolean }
  | { index: number; status: 'refused'; reasonCode: string; error: string; details?: ErrorDetail[] };

interface Shared {
  credits: CreditCheck;
  campaign?: (id: string) => Promise<Campaign | null>;
}

/** Lead ingest (`POST /leads`, `POST /events`): the documented rules in order, then the contact via the outbox. */
export class LeadIngest {
  /** Read with `peek`, so a read does not keep a campaign (see `runningCampaign`). */
  private readonly running = new LRUCache<string, { campaign: Campaign; until: number }>({ max: 10_000 });

  constructor(
    private readonly d: {
      campaigns: CampaignStore;
      contacts: ContactStore;
      routes: EventRouteStore;
      templates: TemplateStore;
      messages: MessageStore;
      checks: ComplianceChecks;
      credits: CreditCheck;
      writer: AcceptWriter;
      now: () => Date;
      metrics?: { leads: TypedCounter<{ outcome: string }> };
    },
  ) {}

  async ingestEvent(
    scope: TenantScope,
    eventType: string,
    lead: LeadInput,
    operationId?: string,
  ): Promise<IngestResult> {
    const route = await this.d.routes.get(scope, eventType);
    if (!route)
      throw leadsReasons.error(
        'event_route_not_found',
        `no event route maps eventType ${JSON.stringify(eventType)} to a campaign`,
      );
    return this.ingest(scope, route.campaignId, lead, operationId);
  }

  /** `operationId` (the same on every try) becomes the contact id, so a retried ingest stores nothing twice. */
  async ingest(scope: TenantScope, campaignId: string, lead: LeadInput, operationId?: string): Promise<IngestResult> {
    return this.counted(() =>
      this.decide(scope, campaignId, lead, operationId ?? this.d.contacts.newId(), { credits: this.d.credits }),
    );
  }

  /**
   * Many leads by `ingest`'s rules, their reads and writes sent together. Contact ids follow from the external id
   * or `batchKey` and index, so a retried batch stores no lead twice; a known external id repeats as `duplicate`.
   */
  async ingestBatch(scope: TenantScope, batchKey: string, leads: readonly BatchLead[]): Promise<BatchOutcome[]> {
    const idOf = (l: BatchLead) =>
      this.d.contacts.idFor(
        l.externalId !== undefined
          ? `external:${scope.tenantId}:${scope.mode}:${l.externalId}`
          : `batch:${scope.tenantId}:${scope.mode}:${batchKey}:${l.index}`,
      );
    const firstWithId = new Map<string, number>();
    const repeated = leads.map((l) => {
      if (l.externalId === undefined) return undefined;
      const first = firstWithId.get(l.externalId);
      if (first === undefined) firstWithId.set(l.externalId, l.index);
      return first;
    });
    const before = await Promise.all(
      leads.map((l, i) =>
        l.externalId !== undefined && repeated[i] === undefined
          ? this.d.contacts.get(scope, idOf(l))
          : Promise.resolve(null),
      ),
    );
    const campaigns = new Map<string, Promise<Campaign | null>>();
    const shared: Shared = {
      credits: onceEachCallLength(this.d.credits),
      campaign: (id) => campaigns.get(id) ?? campaigns.set(id, this.runningCampaign(scope, id)).get(id)!,
    };
    const settled = await Promise.allSettled(
      leads.map(async (l, i): Promise<BatchOutcome> => {
        const first = repeated[i];
        if (first !== undefined) {
          return refusedOutcome(
            l.index,
            validationError(`externalId repeats lead ${first}'s in this batch`, [
              { path: 'externalId', message: `the same as lead ${first}'s` },
            ]),
          );
        }
        const stored = before[i];
        if (stored) return acceptedOutcome(l.index, stored, true);
        const externalId = l.externalId;
        const r = await this.counted(() => this.decide(scope, l.campaignId, l.lead, idOf(l), shared, externalId));
        return acceptedOutcome(l.index, r.contact, r.storedBefore && externalId !== undefined);
      }),
    );
    // A non-refusal failure (store away) fails the request; the retry answers accepted leads as stored.
    const failed = settled.find(
      (s): s is PromiseRejectedResult => s.status === 'rejected' && !(s.reason instanceof DomainError),
    );
    if (failed) throw failed.reason as Error;
    return settled.map((s, i) =>
      s.status === 'fulfilled' ? s.value : refusedOutcome(leads[i]!.index, s.reason as DomainError),
    );
  }

  private async counted(decide: () => Promise<IngestResult>): Promise<IngestResult> {
    try {
      const r = await decide();
      this.d.metrics?.leads.add(1, { outcome: r.status === 'accepted' ? r.contact.status : r.status });
      return r;
    } catch (err) {
      this.d.metrics?.leads.add(1, { outcome: err instanceof DomainError ? err.reasonCode : 'error' });
      throw err;
    }
  }

  private async decide(
    scope: TenantScope,
    campaignId: string,
    lead: LeadInput,
    contactId: string,
    shared: Shared,
    externalId?: string,
  ): Promise<IngestResult> {
    const now = this.d.now();

    // 1. The campaign: the tenant's, and running.
    const campaign = await (shared.campaign ?? ((id: string) => this.runningCampaign(scope, id)))(campaignId);
    if (!campaign)
      throw leadsReasons.error('campaign_not_found', 'no such campaign for this tenant', [
        { path: 'campaignId', message: 'unknown' },
      ]);
    if (campaign.status !== 'running') {
      throw leadsReasons.error(
        'campaign_not_running',
        `the campaign is ${campaign.status}; leads are accepted while it is running`,
      );
    }

    // 2. The phone: a real number in some numbering plan.
    const parsed = await parsePhone(lead.phone);
    if (!parsed.ok) throw validationError(`phone ${parsed.message}`, [{ path: 'phone', message: parsed.message }]);
    const phone = parsed.phone;

    // 3. Channels.
    const channels = checkChannels(lead, campaign);
    const calls = channels.includes('call');

    // 4. The call channel: consent, then both do-not-call lists.
    let compliance: Compliance | undefined;
    if (calls) compliance = await this.callCompliance(scope, lead, campaign, phone, now);

    // 5. Templates: every placeholder filled.
    const rendered = await this.renderMessages(scope, lead, channels, phone);

    // 6. A live call needs credit for one call's hold now.
    const live = scope.mode === 'live';
    if (live && calls && !(await shared.credits.coversOneCall(scope, campaign.maxCallSeconds))) {
      throw leadsReasons.error(
        'insufficient_credits',
        "the wallet's available credit cannot cover one call's hold; top up and retry",
      );
    }

    const opensLater = compliance !== undefined && !compliance.callingWindow.open;
    const contact: Contact = {
      id: contactId,
      campaignId: campaign.id,
      phone: phone.e164,
      ...(lead.name !== undefined && { name: lead.name }),
      ...(lead.email !== undefined && { email: lead.email }),
      channels,
      status: !live ? 'sandbox_accepted' : opensLater ? 'scheduled' : 'queued',
      attempts: 0,
      dispatches: 0,
      ...(lead.consent && { consent: lead.consent }),
      ...(compliance && { compliance }),
      ...(live &&
        opensLater &&
        compliance?.callingWindow.nextOpenAt && { nextAttemptAt: compliance.callingWindow.nextOpenAt }),
      sandbox: !live,
      ...(rendered.length > 0 && { messageInputs: messageInputs(lead) }),
      ...(calls && { timeZones: phone.timeZones }),
      ...(externalId !== undefined && { externalId }),
      createdAt: now,
      updatedAt: now,
    };
    if (!live) {
      // Sandbox: checked like a live lead, but nothing leaves the platform.
      return { status: 'sandbox_accepted', ...(await this.d.contacts.create(scope, contact)) };
    }
    return { status: 'accepted', ...(await this.accept(scope, contact, campaign, rendered, now)) };
  }

  /** Running campaigns are cached briefly for bursts; a start is seen at once, a stop within `RUNNING_CAMPAIGN_MS`. */
  private async runningCampaign(scope: TenantScope, id: string): Promise<Campaign | null> {
    const key = `${scope.tenantId}:${id}`;
    const known = this.running.peek(key);
    if (known && known.until > Date.now()) return known.campaign;
    const campaign = await this.d.campaigns.get(scope, id);
    if (campaign?.status === 'running') {
      this.running.set(key, { campaign, until: Date.now() + RUNNING_CAMPAIGN_MS });
    } else this.running.delete(key);
    return campaign;
  }

  /** Stored outbox-first (see AcceptWriter). */
  private async accept(
    scope: TenantScope,
    contact: Contact,
    campaign: Campaign,
    rendered: Rendered[],
    now: Date,
  ): Promise<{ contact: Contact; storedBefore: boolean }> {
    const messages: Message[] = rendered.map((r) => ({
      id: this.d.messages.idFor(contact.id, r.channel),
      contactId: contact.id,
      channel: r.channel,
      templateId: r.template.id,
      to: r.to,
      ...(r.subject !== undefined && { subject: r.subject }),
      body: r.body,
      status: 'queued',
      createdAt: now,
    }));
    const { tenantId } = scope;
    const events: LeadEvent[] = [
      ...(contact.status === 'queued'
        ? [{ kind: 'dialRequested' as const, tenantId, contact, campaign, dispatch: 1, at: now }]
        : []),
      ...messages.map((m) => ({
        kind: 'messageRequested' as const,
        tenantId,
        contactId: contact.id,
        messageId: m.id,
        channel: m.channel,
        at: now,
      })),
    ];
    const stored = { ...contact, dispatches: contact.status === 'queued' ? 1 : 0 };
    return this.d.writer.accept({ scope, contact: stored, messages, events });
  }

  private async callCompliance(
    scope: TenantScope,
    lead: LeadInput,
    campaign: Campaign,
    phone: ParsedPhone,
    now: Date,
  ): Promise<Compliance> {
    if (lead.consent?.outboundCall !== true) {
      throw leadsReasons.error('consent_required', 'the call channel needs consent.outboundCall: true', [
        { path: 'consent.outboundCall', message: 'must be true for the call channel' },
      ]);
    }
    const capturedAt = lead.consent.capturedAt;
    if (capturedAt && capturedAt.getTime() > now.getTime() + CAPTURE_SKEW_MS) {
      throw validationError('consent.capturedAt must not be in the future', [
        { path: 'consent.capturedAt', message: 'in the future' },
      ]);
    }
    const checks = await this.d.checks.run(scope, phone.e164, campaign.callingWindow, phone, now);
    if (checks.doNotCall.tenant || checks.doNotCall.platform) {
      const lists = [checks.doNotCall.tenant && 'tenant', checks.doNotCall.platform && 'platform']
        .filter(Boolean)
        .join(' and ');
      throw leadsReasons.error(
        'do_not_call',
        `the number is on the ${lists} do-not-call list`,
        doNotCallDetails(checks.doNotCall),
      );
    }
    return { checkedAt: now, consent: lead.consent, doNotCall: checks.doNotCall, callingWindow: checks.window };
  }

  private async renderMessages(
    scope: TenantScope,
    lead: LeadInput,
    channels: Channel[],
    phone: ParsedPhone,
  ): Promise<Rendered[]> {
    const wanted = MESSAGE_CHANNELS.filter((c) => channels.includes(c));
    const out: Rendered[] = [];
    const problems: ErrorDetail[] = [];
    for (const channel of wanted) {
      const field = channel === 'whatsapp' ? 'whatsappTemplateId' : 'emailTemplateId';
      const id = lead[field];
      if (!id) {
        problems.push({ path: field, message: `required for the ${channel} channel (GET /omni/templates lists them)` });
        continue;
      }
      const template = await this.d.templates.get(scope, id);
      if (!template || template.channel !== channel) {
        problems.push({ path: field, message: `no ${channel} template with this id` });
        continue;
      }
      const r = renderTemplate(template, lead, channel === 'whatsapp' ? phone.e164 : (lead.email ?? ''));
      if ('missing' in r) problems.push(...r.missing);
      else out.push(r);
    }
    if (problems.length) throw validationError(problems.map((p) => `${p.path}: ${p.message}`).join('; '), problems);
    return out;
  }
}

interface Rendered {
  channel: MessageChannel;
  template: Template;
  to: string;
  subject?: string;
  body: string;
}

/** A template filled from the lead's values (WhatsApp from `whatsappParams`, email from `templateVariables`). */
export function renderTemplate(
  template: Template,
  inputs: MessageInputs,
  to: string,
): Rendered | { missing: ErrorDetail[] } {
  const whatsapp = template.channel === 'whatsapp';
  const values = whatsapp ? whatsappValues(inputs.whatsappParams) : (inputs.templateVariables ?? {});
  const source = whatsapp ? 'whatsappParams' : 'templateVariables';
  const body = render(template.body, values);
  const subject = template.subject === undefined ? undefined : render(template.subject, values);
  const missing = [...(body.ok ? [] : body.missing), ...(subject && !subject.ok ? subject.missing : [])];
  if (missing.length) {
    return {
      missing: [...new Set(missing)].map((name) => ({
        path: `${source}.${name}`,
        message: `missing: template ${template.id} uses {{${name}}}`,
      })),
    };
  }
  return {
    channel: template.channel,
    template,
    to,
    ...(subject?.ok && { subject: subject.text }),
    body: body.ok ? body.text : '',
  };
}

function checkChannels(lead: LeadInput, campaign: Campaign): Channel[] {
  const problems: ErrorDetail[] = [];
  if (lead.channels.length === 0) problems.push({ path: 'channels', message: 'name at least one channel' });
  if (new Set(lead.channels).size !== lead.channels.length)
    problems.push({ path: 'channels', message: 'each channel at most once' });
  for (const c of lead.channels) {
    if (!isChannel(c)) problems.push({ path: 'channels', message: `unknown channel ${JSON.stringify(c)}` });
    else if (!campaign.channels.includes(c))
      problems.push({ path: 'channels', message: `the campaign does not use the ${c} channel` });
  }
  if (lead.channels.includes('email') && !lead.email)
    problems.push({ path: 'email', message: 'required for the email channel' });
  if (problems.length) throw validationError(problems.map((p) => `${p.path}: ${p.message}`).join('; '), problems);
  return lead.channels as Channel[];
}

function messageInputs(lead: LeadInput): MessageInputs {
  return {
    ...(lead.whatsappTemplateId && { whatsappTemplateId: lead.whatsappTemplateId }),
    ...(lead.emailTemplateId && { emailTemplateId: lead.emailTemplateId }),
    ...(Object.keys(lead.templateVariables).length > 0 && { templateVariables: lead.templateVariables }),
    ...(Object.keys(lead.whatsappParams).length > 0 && { whatsappParams: lead.whatsappParams }),
  };
}

/** One credit check per call length for a whole batch (its leads share one wallet). */
function onceEachCallLength(credits: CreditCheck): CreditCheck {
  const asked = new Map<number, Promise<boolean>>();
  return {
    coversOneCall: (scope, maxCallSeconds) =>
      asked.get(maxCallSeconds) ??
      asked.set(maxCallSeconds, credits.coversOneCall(scope, maxCallSeconds)).get(maxCallSeconds)!,
  };
}

/** A stored contact as a batch result: `scheduled` when the calling window was closed at ingest. */
function acceptedOutcome(index: number, contact: Contact, duplicate: boolean): BatchOutcome {
  const status = contact.sandbox
    ? 'sandbox_accepted'
    : contact.compliance?.callingWindow.open === false
      ? 'scheduled'
      : 'accepted';
  return { index, status, contact, duplicate };
}

function refusedOutcome(index: number, err: DomainError): BatchOutcome {
  return {
    index,
    status: 'refused',
    reasonCode: err.reasonCode,
    error: err.message,
    ...(err.details?.length && { details: err.details }),
  };
}
