import { commonReasons, notFound, validationError, type ErrorDetail } from '@voiceapi/kit/errors';
import { type PageAsked, type TenantScope } from '@voiceapi/kit/grpc';
import { type Page } from '@voiceapi/kit/mongo';
import { windowProblems, type WindowSetting } from '../domain/calling-window';
import { CHANNELS, isChannel, type Campaign, type CampaignStats, type Channel, type Contact } from '../domain/contact';
import type { CampaignStore } from '../store/campaign-store';
import type { ContactStore } from '../store/contact-store';

/** Defaults of a campaign created without them (the operator API documents them). */
export const CAMPAIGN_DEFAULTS = { maxCallSeconds: 600, maxAttempts: 3, retryAfterMinutes: 60 } as const;
export const CAMPAIGN_BOUNDS = {
  maxCallSeconds: [10, 3600],
  maxAttempts: [1, 10],
  retryAfterMinutes: [1, 10_080],
} as const;

export interface NewCampaign {
  name: string;
  type?: string;
  channels?: string[];
  agentName?: string;
  fromNumber?: string;
  callingWindow?: WindowSetting;
  maxCallSeconds?: number;
  maxAttempts?: number;
  retryAfterMinutes?: number;
}

export type CampaignWithStats = Campaign & { stats: CampaignStats };

/** Campaigns: read-only for tenants; created and started by the operator (the dashboard). */
export class Campaigns {
  constructor(
    private readonly campaigns: CampaignStore,
    private readonly contacts: ContactStore,
    private readonly defaultWindow: WindowSetting,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async list(scope: TenantScope, asked: PageAsked): Promise<Page<CampaignWithStats> & PageAsked> {
    const res = await this.campaigns.list(scope, asked.page, asked.limit);
    const stats = await this.contacts.stats(
      scope,
      res.items.map((c) => c.id),
    );
    return { ...res, ...asked, items: res.items.map((c) => ({ ...c, stats: stats.get(c.id)! })) };
  }

  async get(scope: TenantScope, id: string): Promise<CampaignWithStats> {
    const c = await this.campaigns.get(scope, id);
    if (!c) throw notFound('campaign');
    const stats = await this.contacts.stats(scope, [c.id]);
    return { ...c, stats: stats.get(c.id)! };
  }

  async contactsOf(scope: TenantScope, id: string, asked: PageAsked): Promise<Page<Contact> & PageAsked> {
    if (!(await this.campaigns.get(scope, id))) throw notFound('campaign');
    return { ...(await this.contacts.listByCampaign(scope, id, asked.page, asked.limit)), ...asked };
  }

  async create(scope: TenantScope, input: NewCampaign): Promise<CampaignWithStats> {
    const problems: ErrorDetail[] = [];
    const name = input.name?.trim() ?? '';
    if (!name) problems.push({ path: 'name', message: 'required' });
    const type = input.type || 'api';
    // CSV campaigns are the dashboard's; the API creates the API-ingest kind only.
    if (type !== 'api') problems.push({ path: 'type', message: 'only "api" campaigns are created here' });
    const channels = input.channels?.length ? input.channels : [...CHANNELS];
    if (new Set(channels).size !== channels.length)
      problems.push({ path: 'channels', message: 'each channel at most once' });
    for (const c of channels)
      if (!isChannel(c)) problems.push({ path: 'channels', message: `unknown channel ${JSON.stringify(c)}` });
    const window = input.callingWindow ?? this.defaultWindow;
    if (input.fromNumber !== undefined && !/^\+[1-9]\d{6,14}$/.test(input.fromNumber))
      problems.push({ path: 'fromNumber', message: 'must be an E.164 number, e.g. +14155550100' });
    if (window !== 'always')
      problems.push(...windowProblems(window).map((p) => ({ path: `callingWindow.${p.path}`, message: p.message })));
    const limits = {
      ...CAMPAIGN_DEFAULTS,
      ...definedOnly({
        maxCallSeconds: input.maxCallSeconds,
        maxAttempts: input.maxAttempts,
        retryAfterMinutes: input.retryAfterMinutes,
      }),
    };
    for (const [key, [min, max]] of Object.entries(CAMPAIGN_BOUNDS) as [
      keyof typeof CAMPAIGN_BOUNDS,
      readonly [number, number],
    ][]) {
      const v = limits[key];
      if (!Number.isInteger(v) || v < min || v > max)
        problems.push({ path: key, message: `a whole number from ${min} to ${max}` });
    }
    if (problems.length) throw validationError(problems.map((p) => `${p.path}: ${p.message}`).join('; '), problems);
    const now = this.now();
    const created = await this.campaigns.create(scope, {
      name,
      type: 'api',
      status: 'draft',
      channels: channels as Channel[],
      ...(input.agentName?.trim() && { agentName: input.agentName.trim() }),
      ...(input.fromNumber && { fromNumber: input.fromNumber }),
      callingWindow: window,
      ...limits,
      createdAt: now,
      updatedAt: now,
    });
    return { ...created, stats: { contacts: 0, queued: 0, completed: 0, failed: 0 } };
  }

  /** draft → running; starting a running campaign answers it as it is. */
  async start(scope: TenantScope, id: string): Promise<CampaignWithStats> {
    const c = await this.campaigns.get(scope, id);
    if (!c) throw notFound('campaign');
    if (c.status === 'running') return this.get(scope, id);
    if (c.status !== 'draft' && c.status !== 'paused')
      throw commonReasons.error('conflict', `a ${c.status} campaign cannot be started`);
    await this.campaigns.setStatus(scope, id, 'running', this.now());
    return this.get(scope, id);
  }
}

function definedOnly<T extends Record<string, number | undefined>>(o: T): Partial<Record<keyof T, number>> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<Record<keyof T, number>>;
}
