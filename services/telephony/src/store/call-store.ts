// Over 300 lines because a call's row, details and moves are one store, each move's condition read beside the others.
import { type TenantScope } from '@voiceapi/kit/grpc';
import {
  modelOf,
  stringIds,
  TenantCollection,
  type Page,
  type QueryShape,
  type ScopedFilter,
} from '@voiceapi/kit/mongo';
import { Coalescer } from '@voiceapi/kit/work';
import { Schema, type Connection } from 'mongoose';
import {
  ACTIVE_STATUSES,
  type Call,
  type CallDetails,
  type CallStatus,
  type Direction,
  type RecordingRef,
} from '../domain/call';

/** The lifecycle moves a row takes once each (ringing, answered, ended). */
type Move = 'ringing' | 'answered' | 'ended';

interface CallDoc extends Omit<Call, 'id'> {
  _id: string;
  /** Which write made each move (kit `updateByIdShared`'s marks: how a caller knows its move applied). */
  moves?: Partial<Record<Move, string>>;
  /** Written with the call's end (decision 0146); calls ended by telephony 1.2/1.3.0 keep theirs in `call_details`. */
  details?: CallDetails;
}

const detailsFields = {
  transcript: [{ _id: false, role: String, text: String, at: Date }],
  analysis: {
    type: { _id: false, summary: String, sentiment: String, outcome: String, optOut: Boolean },
    default: undefined,
  },
};

export const callSchema = new Schema<CallDoc>(
  {
    _id: String,
    tenantId: { type: String, required: true },
    direction: { type: String, required: true },
    status: { type: String, required: true },
    outcome: String,
    dialId: String,
    contactId: String,
    campaignId: String,
    agentId: String,
    agentName: String,
    fromNumber: { type: String, default: null },
    toNumber: { type: String, default: null },
    carrierCallId: String,
    startedAt: { type: Date, required: true },
    answeredAt: Date,
    endedAt: Date,
    durationSeconds: { type: Number, required: true },
    maxCallSeconds: { type: Number, required: true },
    talkSeconds: Number,
    endReason: String,
    sandbox: { type: Boolean, required: true },
    holdFailed: { type: Boolean, required: true },
    billingStatus: { type: String, required: true },
    creditsCharged: Number,
    creditsError: String,
    balanceAfter: Number,
    hasTranscript: { type: Boolean, required: true },
    hasAnalysis: { type: Boolean, required: true },
    hasRecording: { type: Boolean, required: true },
    recording: {
      type: new Schema(
        { key: String, contentType: String, sizeBytes: Number, durationSeconds: Number, storedAt: Date },
        { _id: false, versionKey: false },
      ),
      required: false,
    },
    summary: String,
    erased: Boolean,
    settleDueAt: Date,
    recordingDueAt: Date,
    moves: { type: { _id: false, ringing: String, answered: String, ended: String }, default: undefined },
    details: { type: new Schema(detailsFields, { _id: false, versionKey: false }), required: false },
  },
  { collection: 'calls', versionKey: false },
);
// The feed per API filter, newest first (combined filters use one); `_id` breaks ties so pages never skip or repeat.
callSchema.index({ tenantId: 1, startedAt: -1, _id: -1 });
callSchema.index({ tenantId: 1, direction: 1, startedAt: -1, _id: -1 });
callSchema.index({ tenantId: 1, status: 1, startedAt: -1, _id: -1 });
callSchema.index({ tenantId: 1, campaignId: 1, startedAt: -1, _id: -1 });
callSchema.index({ tenantId: 1, agentId: 1, startedAt: -1, _id: -1 });
callSchema.index({ tenantId: 1, contactId: 1, startedAt: -1, _id: -1 });
// Calls ended without their charge (billing was away), every tenant's: few, and only while billing is.
callSchema.index({ settleDueAt: 1 }, { sparse: true });
// Recordings object storage could not take as their calls ended: few, and only while it is away.
callSchema.index({ recordingDueAt: 1 }, { sparse: true });
// Recordings by age, for a retention period (only calls with a recording have the field).
callSchema.index({ 'recording.storedAt': 1 }, { sparse: true });
const newest = { startedAt: -1, _id: -1 } as const;
export const callQueryShapes: QueryShape[] = [
  { name: 'feed', equality: ['tenantId'], sort: newest, range: [] },
  { name: 'feed by date', equality: ['tenantId'], sort: newest },
  { name: 'feed by direction', equality: ['tenantId', 'direction'], sort: newest },
  { name: 'feed by status', equality: ['tenantId', 'status'], sort: newest },
  { name: 'feed by campaign', equality: ['tenantId', 'campaignId'], sort: newest },
  { name: 'feed by agent', equality: ['tenantId', 'agentId'], sort: newest },
  { name: 'contact', equality: ['tenantId', 'contactId'], sort: newest },
  // An analytics bucket's calls: the tenant's calls of one direction started in a quarter hour.
  { name: 'bucket', equality: ['tenantId', 'direction'], range: ['startedAt'] },
  { name: 'settlement due', equality: [], range: ['settleDueAt'] },
  { name: 'recording due', equality: [], range: ['recordingDueAt'] },
  { name: 'recordings by age', equality: [], range: ['recording.storedAt'] },
];

interface DetailsDoc extends CallDetails {
  _id: string;
  tenantId: string;
}

export const detailsSchema = new Schema<DetailsDoc>(
  {
    _id: String,
    tenantId: { type: String, required: true },
    ...detailsFields,
  },
  { collection: 'call_details', versionKey: false },
);

export interface CallFilter {
  direction?: Direction;
  status?: CallStatus;
  agentId?: string;
  campaignId?: string;
  contactId?: string;
  startedAfter?: Date;
  startedBefore?: Date;
}

/** What billing's outcome sets on a call. */
type BillingFields = Pick<Call, 'billingStatus'> &
  Partial<Pick<Call, 'creditsCharged' | 'creditsError' | 'balanceAfter'>>;

interface BillingOutcome {
  id: string;
  tenantId: string;
  fields: BillingFields;
}

/** Fields a finished call sets: the end, and its charge when billing settled it then. */
export type CallEnd = Pick<
  Call,
  'status' | 'outcome' | 'endedAt' | 'durationSeconds' | 'hasTranscript' | 'hasAnalysis' | 'hasRecording'
> &
  Partial<
    Pick<
      Call,
      | 'summary'
      | 'endReason'
      | 'carrierCallId'
      | 'answeredAt'
      | 'holdFailed'
      | 'settleDueAt'
      | 'recording'
      | 'recordingDueAt'
    >
  > &
  Partial<BillingFields> & {
    /** The transcript and analysis (decision 0146): the row's own from its end, never in the feed's events. */
    details?: CallDetails;
  };

/** Calls (the feed's rows) and their transcripts and analyses (read one call at a time). */
export class CallStore {
  private readonly calls: TenantCollection<CallDoc, string>;
  private readonly details: TenantCollection<DetailsDoc, string>;
  /** Billing's outcomes arriving together: one bulk update, then one read of the rows they changed. */
  private readonly billingWrites = new Coalescer<BillingOutcome, Call | null>((outcomes) =>
    this.writeBilling(outcomes),
  );

  constructor(conn: Connection) {
    this.calls = new TenantCollection(modelOf(conn, 'Call', callSchema), stringIds, callQueryShapes);
    this.details = new TenantCollection(modelOf(conn, 'CallDetails', detailsSchema), stringIds, []);
  }

  /** True when this insert created the call, false when its id exists; calls created together are inserted together. */
  create(scope: TenantScope, call: Call): Promise<boolean> {
    const { id, tenantId: _t, ...rest } = call;
    // Inserted as built (no schema defaults): absent numbers are stored as null, as the schema says.
    return this.calls.insertShared(scope, {
      _id: id,
      ...rest,
      fromNumber: rest.fromNumber ?? null,
      toNumber: rest.toNumber ?? null,
    });
  }

  async get(scope: TenantScope, id: string): Promise<Call | null> {
    const doc = await this.calls.findById(scope, id);
    return doc ? toCall(doc) : null;
  }

  /** Any tenant's call, for the lifecycle that already knows the call (its tenant is in the row). */
  async byId(id: string): Promise<Call | null> {
    // Calls ending together read their rows together.
    const doc = await this.calls
      .crossTenant('a call is found and moved by its id alone; its row carries its tenant')
      .findByIdShared(id);
    return doc ? toCall(doc) : null;
  }

  async getMany(scope: TenantScope, ids: readonly string[]): Promise<Call[]> {
    const calls = await Promise.all(ids.map((id) => this.get(scope, id)));
    return calls.filter((c): c is Call => c !== null).sort((a, b) => b.startedAt.getTime() - a.startedAt.getTime());
  }

  async page(scope: TenantScope, f: CallFilter, page: number, limit: number): Promise<Page<Call>> {
    const filter: ScopedFilter<CallDoc> = {
      ...(f.direction && { direction: f.direction }),
      ...(f.status && { status: f.status }),
      ...(f.agentId && { agentId: f.agentId }),
      ...(f.campaignId && { campaignId: f.campaignId }),
      ...(f.contactId && { contactId: f.contactId }),
      ...((f.startedAfter || f.startedBefore) && {
        startedAt: {
          ...(f.startedAfter && { $gte: f.startedAfter }),
          ...(f.startedBefore && { $lte: f.startedBefore }),
        },
      }),
    };
    const res = await this.calls.page(scope, filter, {
      sort: { startedAt: -1, _id: -1 },
      page,
      limit,
      projection: { maxCallSeconds: 0, details: 0 },
    });
    return { ...res, items: res.items.map(toCall) };
  }

  /** The calls of one direction whose start lies in [from, to): one analytics bucket's input. */
  async startedBetween(scope: TenantScope, direction: Direction, from: Date, to: Date): Promise<Call[]> {
    const docs = await this.calls.find(
      scope,
      { direction, startedAt: { $gte: from, $lt: to } },
      {
        projection: {
          tenantId: 1,
          direction: 1,
          status: 1,
          outcome: 1,
          agentId: 1,
          campaignId: 1,
          durationSeconds: 1,
          creditsCharged: 1,
          startedAt: 1,
        },
      },
    );
    return docs.map(toCall);
  }

  /** Queued → ringing; null when this write did not move it (another try did, or it ended). */
  setRinging(id: string, from: readonly CallStatus[] = ['queued']): Promise<Call | null> {
    return this.move(id, 'ringing', { status: 'ringing' }, from);
  }

  setAnswered(id: string, answeredAt: Date, carrierCallId: string, holdFailed: boolean): Promise<Call | null> {
    return this.move(id, 'answered', { status: 'in_progress', answeredAt, carrierCallId, holdFailed }, [
      'queued',
      'ringing',
    ]);
  }

  /** Ends a call still active; null when it had ended already (a recovery raced its owner). */
  finish(id: string, end: CallEnd): Promise<Call | null> {
    return this.move(id, 'ended', end, ACTIVE_STATUSES);
  }

  /** Billing's one outcome of the call (a redelivery sets the same); null when the tenant has no such call. Batched. */
  setBilling(id: string, tenantId: string, b: BillingFields): Promise<Call | null> {
    return this.billingWrites.run({ id, tenantId, fields: b });
  }

  private async writeBilling(outcomes: BillingOutcome[]): Promise<(Call | null)[]> {
    const byCallId = this.calls.crossTenant("billing's outcomes name each call's tenant; each is written under it");
    await byCallId.updateManyById(
      outcomes.map((o) => ({ id: o.id, tenantId: o.tenantId, update: { $set: o.fields, $unset: { settleDueAt: 1 } } })),
    );
    return (await byCallId.findManyById(outcomes)).map((row) => row && toCall(row));
  }

  /** Calls of every tenant that ended without their charge and are due to be settled again. */
  async dueForSettlement(now: Date, limit: number): Promise<Call[]> {
    return (
      await this.calls
        .crossTenant('the settlement retry settles the calls of every tenant billing could not settle')
        .find({ settleDueAt: { $lte: now } }, { limit })
    ).map(toCall);
  }

  /** Calls of every tenant whose recording object storage could not take, due to be stored again. */
  async dueForRecording(now: Date, limit: number): Promise<Call[]> {
    return (
      await this.calls
        .crossTenant('the recording retry stores the recordings of every tenant object storage could not take')
        .find({ recordingDueAt: { $lte: now } }, { limit })
    ).map(toCall);
  }

  /** Marks the recording stored; false when the contact was erased meanwhile (the caller removes its object). */
  async setRecording(scope: TenantScope, id: string, ref: RecordingRef): Promise<boolean> {
    const doc = await this.calls.updateById(
      scope,
      id,
      { $set: { recording: ref, hasRecording: true }, $unset: { recordingDueAt: 1 } },
      { where: { erased: { $ne: true } } },
    );
    return doc !== null;
  }

  /** Storing the recording failed again: tried at `at`, or never again (`undefined`: the call has none). */
  async deferRecording(scope: TenantScope, id: string, at: Date | undefined): Promise<void> {
    await this.calls.updateById(scope, id, at ? { $set: { recordingDueAt: at } } : { $unset: { recordingDueAt: 1 } });
  }

  /** Calls of every tenant with a recording stored before `cutoff` (a retention period's end). */
  async recordedBefore(cutoff: Date, limit: number): Promise<Call[]> {
    return (
      await this.calls
        .crossTenant('the retention sweep removes recordings of every tenant once their period ends')
        .find({ 'recording.storedAt': { $lt: cutoff } }, { limit })
    ).map(toCall);
  }

  /** The recording removed after its retention period: the call no longer has one. */
  async forgetRecording(scope: TenantScope, id: string): Promise<void> {
    await this.calls.updateById(scope, id, { $set: { hasRecording: false }, $unset: { recording: 1 } });
  }

  /** The ids of a contact's calls (all of them: erasure walks every one). */
  async idsOfContact(scope: TenantScope, contactId: string): Promise<string[]> {
    return (
      await this.calls.find(scope, { contactId }, { sort: { startedAt: -1, _id: -1 }, projection: { _id: 1 } })
    ).map((d) => d._id);
  }

  /** Erases a call's personal data; the row keeps what billing and analytics need (outcome, duration, charge). */
  async erasePersonalData(scope: TenantScope, id: string): Promise<void> {
    await this.calls.updateById(scope, id, {
      $set: {
        toNumber: null,
        fromNumber: null,
        hasTranscript: false,
        hasAnalysis: false,
        hasRecording: false,
        erased: true,
      },
      $unset: { summary: 1, recording: 1, recordingDueAt: 1, details: 1 },
    });
    await this.details.deleteById(scope, id);
  }

  /** Details by call id: from the rows, else `call_details` (calls ended before rows carried them, decision 0146). */
  async detailsOf(scope: TenantScope, ids: readonly string[]): Promise<Map<string, CallDetails>> {
    if (ids.length === 0) return new Map();
    const rows = await this.calls.find(
      scope,
      { _id: { $in: [...ids] } },
      { limit: ids.length, projection: { details: 1, hasTranscript: 1, hasAnalysis: 1 } },
    );
    const out = new Map<string, CallDetails>();
    // An erased call says it has none, whatever a race left on its row.
    const kept = rows.filter((r) => r.hasTranscript || r.hasAnalysis);
    for (const row of kept) if (row.details) out.set(row._id, detailsOfDoc(row.details));
    const rest = kept.filter((r) => !r.details).map((r) => r._id);
    if (rest.length === 0) return out;
    const docs = await this.details.find(scope, { _id: { $in: rest } }, { limit: rest.length });
    for (const d of docs) out.set(d._id, detailsOfDoc(d));
    return out;
  }

  /** A call with its transcript and analysis: the row's own (decision 0146), else `call_details`'. */
  async getWithDetails(scope: TenantScope, id: string): Promise<{ call: Call; details: CallDetails | null } | null> {
    const doc = await this.calls.findById(scope, id);
    if (!doc) return null;
    const call = toCall(doc);
    if (!call.hasTranscript && !call.hasAnalysis) return { call, details: null };
    if (doc.details) return { call, details: detailsOfDoc(doc.details) };
    const kept = await this.details.findById(scope, id);
    return { call, details: kept ? detailsOfDoc(kept) : null };
  }

  /** The row after `set` if this write moved it from one of `from`, else null; moves asked together are batched. */
  private async move(
    id: string,
    move: Move,
    set: Partial<Call> & { details?: CallDetails },
    from: readonly CallStatus[],
  ): Promise<Call | null> {
    const doc = await this.calls
      .crossTenant('a call is found and moved by its id alone; its row carries its tenant')
      .updateByIdShared(id, { $set: set }, { where: { status: { $in: [...from] } }, mark: `moves.${move}` });
    return doc ? toCall(doc) : null;
  }
}

function toCall(doc: CallDoc): Call {
  const { _id, moves: _moves, details: _details, ...rest } = doc;
  return { id: _id, ...rest };
}

const detailsOfDoc = (d: Partial<CallDetails>): CallDetails => ({
  transcript: d.transcript ?? [],
  ...(d.analysis && { analysis: d.analysis }),
});
