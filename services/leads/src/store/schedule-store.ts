import { type TenantScope } from '@voiceapi/kit/grpc';
import { isDuplicateKeyError, modelOf, stringIds, TenantCollection, type QueryShape } from '@voiceapi/kit/mongo';
import { Schema, type Connection } from 'mongoose';

export interface ScheduledItem {
  /** `<contactId>:dial` (one pending dial per contact) or `<contactId>:followup:<followupId>`. */
  id: string;
  tenantId: string;
  contactId: string;
  kind: 'dial' | 'followup';
  followupId?: string;
  dueAt: Date;
}

interface ScheduleDoc extends Omit<ScheduledItem, 'id'> {
  _id: string;
}

export const scheduleSchema = new Schema<ScheduleDoc>(
  {
    _id: String,
    tenantId: { type: String, required: true },
    contactId: { type: String, required: true },
    kind: { type: String, required: true },
    followupId: String,
    dueAt: { type: Date, required: true },
  },
  { collection: 'schedule', versionKey: false },
);
// One index per query shape; entries are deleted once dispatched, so only pending work is indexed.
scheduleSchema.index({ dueAt: 1 });
scheduleSchema.index({ tenantId: 1, contactId: 1 });
export const scheduleQueryShapes: QueryShape[] = [
  // The earliest items, due or not (the first not due says when to look again).
  { name: 'due', equality: [], sort: { dueAt: 1 } },
  { name: 'contact', equality: ['tenantId', 'contactId'] },
];

export const dialItemId = (contactId: string): string => `${contactId}:dial`;
export const followupItemId = (contactId: string, followupId: string): string => `${contactId}:followup:${followupId}`;

export class ScheduleStore {
  private readonly items: TenantCollection<ScheduleDoc, string>;
  private readonly listeners: ((dueAt: Date) => void)[] = [];

  constructor(conn: Connection) {
    this.items = new TenantCollection(modelOf(conn, 'Schedule', scheduleSchema), stringIds, scheduleQueryShapes);
  }

  /** Schedules the item, or moves it when it exists (one pending dial per contact). */
  async put(scope: TenantScope, item: Omit<ScheduledItem, 'tenantId'>): Promise<void> {
    const { id, ...rest } = item;
    const moved = await this.items.updateById(scope, id, { $set: { dueAt: rest.dueAt } });
    if (!moved) {
      try {
        await this.items.insert(scope, { ...rest, _id: id });
      } catch (err) {
        if (!isDuplicateKeyError(err)) throw err;
        await this.items.updateById(scope, id, { $set: { dueAt: rest.dueAt } });
      }
    }
    this.scheduled([rest.dueAt]);
  }

  /** New contacts' first items in one round trip; an existing id (a retried ingest) is left as it is. */
  async addNew(scope: TenantScope, items: readonly Omit<ScheduledItem, 'tenantId'>[]): Promise<void> {
    await this.items.insertNew(
      scope,
      items.map(({ id, ...rest }) => ({ ...rest, _id: id })),
    );
    this.scheduled(items.map((i) => i.dueAt));
  }

  /** Due items of every tenant, oldest first, and when the next falls due: one read of `limit + 1`. */
  async due(now: Date, limit: number): Promise<{ items: ScheduledItem[]; nextDueAt?: Date }> {
    const docs = await this.items
      .crossTenant('the scheduler dispatches due work of every tenant')
      .find({}, { sort: { dueAt: 1 }, limit: limit + 1 });
    const items = docs
      .filter((d) => d.dueAt.getTime() <= now.getTime())
      .slice(0, limit)
      .map(({ _id, ...rest }) => ({ id: _id, ...rest }));
    const next = docs.find((d) => d.dueAt.getTime() > now.getTime());
    return { items, ...(next && { nextDueAt: next.dueAt }) };
  }

  /** The earliest due time of what this process scheduled; other replicas' items are found by the next look. */
  onScheduled(listener: (dueAt: Date) => void): void {
    this.listeners.push(listener);
  }

  private scheduled(dueTimes: readonly Date[]): void {
    if (dueTimes.length === 0) return;
    const earliest = new Date(Math.min(...dueTimes.map((d) => d.getTime())));
    for (const listener of this.listeners) listener(earliest);
  }

  async remove(scope: TenantScope, id: string): Promise<void> {
    await this.items.deleteById(scope, id);
  }

  /** Drops a contact's pending work (cancel, opt-out, delete). */
  dropContact(scope: TenantScope, contactId: string): Promise<number> {
    return this.items.deleteMany(scope, { contactId });
  }
}
