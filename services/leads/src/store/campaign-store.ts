import { type TenantScope } from '@voiceapi/kit/grpc';
import { modelOf, objectIds, TenantCollection, type Page, type QueryShape } from '@voiceapi/kit/mongo';
import { Schema, type Connection, type Types } from 'mongoose';
import type { WindowSetting } from '../domain/calling-window';
import type { Campaign, CampaignStatus } from '../domain/contact';

interface CampaignDoc extends Omit<Campaign, 'id' | 'callingWindow'> {
  _id: Types.ObjectId;
  tenantId: string;
  /** `always`, or the window as given. */
  callingWindow: { always?: boolean; start?: string; end?: string; days?: string[] };
}

export const campaignSchema = new Schema<CampaignDoc>(
  {
    tenantId: { type: String, required: true },
    name: { type: String, required: true },
    type: { type: String, required: true },
    status: { type: String, required: true },
    channels: { type: [String], required: true },
    agentName: String,
    fromNumber: String,
    callingWindow: { always: Boolean, start: String, end: String, days: { type: [String], default: undefined } },
    maxCallSeconds: { type: Number, required: true },
    maxAttempts: { type: Number, required: true },
    retryAfterMinutes: { type: Number, required: true },
    createdAt: { type: Date, required: true },
    updatedAt: { type: Date, required: true },
  },
  { collection: 'campaigns', versionKey: false, minimize: true },
);
// Serves `newest`: a tenant's campaigns, newest first.
campaignSchema.index({ tenantId: 1, createdAt: -1, _id: -1 });

const NEWEST_FIRST = { createdAt: -1, _id: -1 } as const;
export const campaignQueryShapes: QueryShape[] = [{ name: 'newest', equality: ['tenantId'], sort: NEWEST_FIRST }];

function toCampaign(doc: CampaignDoc): Campaign {
  const { _id, tenantId: _t, callingWindow: w, ...rest } = doc;
  const callingWindow: WindowSetting = w.always
    ? 'always'
    : { start: w.start ?? '00:00', end: w.end ?? '24:00', ...(w.days?.length && { days: w.days as never }) };
  return { id: _id.toString(), ...rest, callingWindow };
}

const windowDoc = (w: WindowSetting): CampaignDoc['callingWindow'] =>
  w === 'always' ? { always: true } : { start: w.start, end: w.end, ...(w.days?.length && { days: [...w.days] }) };

export class CampaignStore {
  private readonly campaigns: TenantCollection<CampaignDoc>;

  constructor(conn: Connection) {
    this.campaigns = new TenantCollection(modelOf(conn, 'Campaign', campaignSchema), objectIds, campaignQueryShapes);
  }

  async create(scope: TenantScope, c: Omit<Campaign, 'id'>): Promise<Campaign> {
    const { callingWindow, ...rest } = c;
    return toCampaign(await this.campaigns.insert(scope, { ...rest, callingWindow: windowDoc(callingWindow) }));
  }

  /** The campaign as it is now (reads asked at once share one: a dial pass's claims each check it). */
  async get(scope: TenantScope, id: string): Promise<Campaign | null> {
    const doc = await this.campaigns.findByIdShared(scope, id);
    return doc && toCampaign(doc);
  }

  async list(scope: TenantScope, page: number, limit: number): Promise<Page<Campaign>> {
    const res = await this.campaigns.page(scope, {}, { sort: NEWEST_FIRST, page, limit });
    return { ...res, items: res.items.map(toCampaign) };
  }

  async setStatus(scope: TenantScope, id: string, status: CampaignStatus, now: Date): Promise<Campaign | null> {
    const doc = await this.campaigns.updateById(scope, id, { $set: { status, updatedAt: now } });
    return doc && toCampaign(doc);
  }
}
