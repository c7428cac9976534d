import { createHash } from 'node:crypto';
import { type ReadBack } from '@voiceapi/kit/events';
import { type TenantScope } from '@voiceapi/kit/grpc';
import { modelOf, objectIds, TenantCollection, type Page, type QueryShape } from '@voiceapi/kit/mongo';
import { Schema, Types, type Connection, type UpdateQuery } from 'mongoose';
import { CONTACT_STATUSES, statsBucket, type CampaignStats, type Contact, type ContactStatus } from '../domain/contact';

/** Template values are JSON text: tenants' keys may be `$`-prefixed or dotted, which documents cannot hold portably. */
interface ContactDoc extends Omit<Contact, 'id' | 'messageInputs'> {
  _id: Types.ObjectId;
  tenantId: string;
  messageInputs?: string;
  /** Which write last moved the contact to each status from a given one (kit `updateByIdShared`'s marks). */
  moves?: Partial<Record<ContactStatus, string>>;
}

const consentFields = { outboundCall: Boolean, capturedAt: Date, source: String };

export const contactSchema = new Schema<ContactDoc>(
  {
    tenantId: { type: String, required: true },
    campaignId: { type: String, required: true },
    phone: { type: String, required: true },
    name: String,
    email: String,
    channels: { type: [String], required: true },
    status: { type: String, required: true, enum: CONTACT_STATUSES },
    attempts: { type: Number, required: true },
    dispatches: { type: Number, required: true },
    consent: { type: consentFields, default: undefined },
    // Evidence, written once at ingest: kept as given.
    compliance: { type: Schema.Types.Mixed },
    nextAttemptAt: Date,
    lastCallId: String,
    lastOutcome: String,
    endReason: String,
    sandbox: { type: Boolean, required: true },
    messageInputs: String,
    timeZones: { type: [String], default: undefined },
    externalId: String,
    createdAt: { type: Date, required: true },
    updatedAt: { type: Date, required: true },
    moves: { type: Schema.Types.Mixed, default: undefined },
    lastMove: { type: { _id: false, from: String, to: String, at: Date, endReason: String }, default: undefined },
  },
  { collection: 'contacts', versionKey: false, minimize: true },
);
// One index per query shape below; `queued-since` serves the relay's re-requests (decision 0149).
contactSchema.index({ tenantId: 1, campaignId: 1, createdAt: -1, _id: -1 });
contactSchema.index({ tenantId: 1, campaignId: 1, status: 1 });
contactSchema.index({ status: 1, updatedAt: 1 }, { partialFilterExpression: { status: 'queued' } });

const NEWEST_FIRST = { createdAt: -1, _id: -1 } as const;
export const contactQueryShapes: QueryShape[] = [
  { name: 'campaign-newest', equality: ['tenantId', 'campaignId'], sort: NEWEST_FIRST },
  { name: 'campaign-stats', equality: ['tenantId', 'campaignId', 'status'] },
  { name: 'queued-since', equality: ['status'], sort: { updatedAt: -1 } },
];

function toContact(doc: ContactDoc): Contact {
  const { _id, tenantId: _t, messageInputs, moves: _moves, ...rest } = doc;
  return {
    id: _id.toString(),
    ...rest,
    ...(messageInputs !== undefined && { messageInputs: JSON.parse(messageInputs) as Contact['messageInputs'] }),
  };
}

export type ContactChange = UpdateQuery<ContactDoc>;

/** A move's condition: one of the `from` statuses and the `where` fields; none without `from`. */
const moveFilter = (from: readonly ContactStatus[] | undefined, where: Record<string, unknown>) =>
  from && { ...where, status: { $in: [...from] } };

export class ContactStore {
  private readonly contacts: TenantCollection<ContactDoc>;

  constructor(conn: Connection) {
    this.contacts = new TenantCollection(modelOf(conn, 'Contact', contactSchema), objectIds, contactQueryShapes);
  }

  /** A fresh id, so events about the contact can be stored before the contact itself. */
  newId(): string {
    return new Types.ObjectId().toString();
  }

  /** An id from a key stable across tries (external id, batch key and index): a resent lead finds its contact. */
  idFor(key: string): string {
    return createHash('sha256').update(key).digest('hex').slice(0, 24);
  }

  /** Concurrent creations are written together; one stored before under its id is answered as stored. */
  async create(scope: TenantScope, c: Contact): Promise<{ contact: Contact; storedBefore: boolean }> {
    const { id, messageInputs, ...rest } = c;
    const created = await this.contacts.insertShared(scope, {
      ...rest,
      ...(messageInputs && { messageInputs: JSON.stringify(messageInputs) }),
      _id: new Types.ObjectId(id),
    });
    if (created) return { contact: c, storedBefore: false };
    const stored = await this.get(scope, id);
    if (!stored) throw new Error(`contact ${id} was refused as stored before but is not the tenant's`);
    return { contact: stored, storedBefore: true };
  }

  /** One tenant's new contacts in one round trip; returns the ids stored before (left as they are). */
  async createMany(scope: TenantScope, contacts: readonly Contact[]): Promise<string[]> {
    const refused = await this.contacts.insertNew(
      scope,
      contacts.map(({ id, messageInputs, ...rest }) => ({
        ...rest,
        ...(messageInputs && { messageInputs: JSON.stringify(messageInputs) }),
        _id: new Types.ObjectId(id),
      })),
    );
    return refused.map((i) => contacts[i]!.id);
  }

  /** The contact as it is now (reads asked at once share one: a dial pass claims many). */
  async get(scope: TenantScope, id: string): Promise<Contact | null> {
    const doc = await this.contacts.findByIdShared(scope, id);
    return doc && toContact(doc);
  }

  /** Live contacts of every tenant queued since `since`, newest first (a crash loses the latest). */
  async queuedSince(since: Date, limit: number): Promise<{ tenantId: string; contact: Contact }[]> {
    const docs = await this.contacts
      .crossTenant("the relay's next holder requests again the dials of every tenant a crash may have lost")
      .find({ status: 'queued', updatedAt: { $gte: since } }, { sort: { updatedAt: -1 }, limit });
    // Sandbox contacts never wait queued: filtered here, not in the index's query.
    return docs.filter((d) => !d.sandbox).map((d) => ({ tenantId: d.tenantId, contact: toContact(d) }));
  }

  async listByCampaign(scope: TenantScope, campaignId: string, page: number, limit: number): Promise<Page<Contact>> {
    const res = await this.contacts.page(scope, { campaignId }, { sort: NEWEST_FIRST, page, limit });
    return { ...res, items: res.items.map(toContact) };
  }

  /** With `from`, applies only in those statuses and matching `where` (else null); concurrent moves share a write. */
  async update(
    scope: TenantScope,
    id: string,
    change: ContactChange,
    from?: readonly ContactStatus[],
    where: Record<string, unknown> = {},
  ): Promise<Contact | null> {
    const to = (change.$set as { status?: ContactStatus } | undefined)?.status;
    const when = moveFilter(from, where);
    const doc =
      from && when && to && !from.includes(to)
        ? await this.contacts.updateByIdShared(scope, id, change, { where: when, mark: `moves.${to}` })
        : await this.contacts.updateById(scope, id, change, when ? { where: when } : {});
    return doc && toContact(doc);
  }

  /** `update` without reading back: concurrent changes are one write. */
  async apply(
    scope: TenantScope,
    id: string,
    change: ContactChange,
    from?: readonly ContactStatus[],
    where: Record<string, unknown> = {},
  ): Promise<void> {
    await this.contacts.applyByIdShared(scope, id, change, { where: moveFilter(from, where) ?? {} });
  }

  /** A move made at `now` happened when the contact carries its status and time. */
  moved(scope: TenantScope, id: string, status: ContactStatus, now: Date): ReadBack {
    return this.contacts.readBack(scope, id, 'present', { status, updatedAt: now });
  }

  stored(scope: TenantScope, id: string): ReadBack {
    return this.contacts.readBack(scope, id, 'present');
  }

  erased(scope: TenantScope, id: string): ReadBack {
    return this.contacts.readBack(scope, id, 'absent');
  }

  delete(scope: TenantScope, id: string): Promise<boolean> {
    return this.contacts.deleteById(scope, id);
  }

  /** One grouped count for all campaigns. */
  async stats(scope: TenantScope, campaignIds: readonly string[]): Promise<Map<string, CampaignStats>> {
    const out = new Map<string, CampaignStats>(
      campaignIds.map((id) => [id, { contacts: 0, queued: 0, completed: 0, failed: 0 }]),
    );
    if (campaignIds.length === 0) return out;
    const rows = await this.contacts.countBy(scope, { campaignId: { $in: [...campaignIds] } }, [
      'campaignId',
      'status',
    ] as const);
    for (const { key, count } of rows) {
      const s = out.get(String(key.campaignId));
      if (!s) continue;
      s.contacts += count;
      const bucket = statsBucket(key.status as ContactStatus);
      if (bucket) s[bucket] += count;
    }
    return out;
  }
}
