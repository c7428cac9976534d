import { notFound, validationError } from '@voiceapi/kit/errors';
import { scopeOfRecord, type TenantScope } from '@voiceapi/kit/grpc';
import { type Page } from '@voiceapi/kit/mongo';
import {
  CALL_STATUSES,
  DIRECTIONS,
  type Call,
  type CallDetails,
  type CallStatus,
  type Direction,
} from '../domain/call';
import type { RecordingTokens } from '../domain/recording-token';
import { telephonyReasons } from '../reasons';
import type { CallFeedStore } from '../store/call-feed-store';
import type { CallFilter, CallStore } from '../store/call-store';
import type { LineStore } from '../store/line-store';
import type { RecordingStore } from '../store/recording-store';

/** How long the presigned address given to the gateway works: it starts reading at once. */
const OBJECT_URL_SECONDS = 60;

export interface FeedQuery {
  direction?: string;
  status?: string;
  agentId?: string;
  campaignId?: string;
  startedAfter?: Date;
  startedBefore?: Date;
}

const MAX_ID = 200;

/** Reading calls: the feed, active calls, one call with its conversation, and recordings. */
export class Calls {
  constructor(
    private readonly d: {
      calls: CallStore;
      feed: CallFeedStore;
      lines: LineStore;
      recordings: RecordingStore;
      tokens: RecordingTokens;
      tokenTtlMs: number;
      now: () => Date;
    },
  ) {}

  list(scope: TenantScope, q: FeedQuery, page: number, limit: number): Promise<Page<Call>> {
    return this.d.calls.page(scope, feedFilter(q), page, limit);
  }

  /** Calls holding a line: queued for the carrier, ringing or in progress. */
  async active(scope: TenantScope): Promise<Call[]> {
    const lines = await this.d.lines.held(scope);
    const calls = await this.d.calls.getMany(
      scope,
      lines.map((l) => l.callId),
    );
    return calls.filter((c) => ['queued', 'ringing', 'in_progress'].includes(c.status));
  }

  /** One call with its transcript and analysis; with a contact, only a call of that contact. */
  async get(scope: TenantScope, id: string, contactId?: string): Promise<{ call: Call; details: CallDetails | null }> {
    const found = await this.d.calls.getWithDetails(scope, id);
    if (!found || (contactId !== undefined && found.call.contactId !== contactId)) throw notFound('call');
    return found;
  }

  /** Transcripts and analyses of up to 100 calls of the tenant, in one read. */
  conversations(scope: TenantScope, callIds: readonly string[]): Promise<Map<string, CallDetails>> {
    const ids = [...new Set(callIds)].filter((id) => id && id.length <= MAX_ID);
    if (ids.length > 100)
      throw validationError('at most 100 calls at once', [{ path: 'callIds', message: 'at most 100' }]);
    return this.d.calls.detailsOf(scope, ids);
  }

  ofContact(scope: TenantScope, contactId: string, page: number, limit: number): Promise<Page<Call>> {
    if (!contactId || contactId.length > MAX_ID) throw notFound('contact');
    return this.d.calls.page(scope, { contactId }, page, limit);
  }

  /** Erases the personal data of a deleted contact's calls; the calls stay in the feed for billing and analytics. */
  async eraseContact(scope: TenantScope, contactId: string): Promise<number> {
    const ids = await this.d.calls.idsOfContact(scope, contactId);
    for (const id of ids) {
      // The audio first: the object's key is the call's, so a repeat after a crash deletes it still.
      await this.d.recordings.erase(scope, id);
      await this.d.calls.erasePersonalData(scope, id);
    }
    // The live feed keeps each change's copy of the call for a day: those lose the numbers too.
    await this.d.feed.erase(scope, ids);
    return ids.length;
  }

  /** A signed path to the call's recording, valid for the configured lifetime (≤ 15 min). */
  async recordingLink(scope: TenantScope, id: string): Promise<{ path: string; expiresAt: Date }> {
    const call = await this.d.calls.get(scope, id);
    if (!call?.hasRecording) throw notFound('recording');
    const expiresAt = new Date(this.d.now().getTime() + this.d.tokenTtlMs);
    const token = this.d.tokens.sign({ tenantId: scope.tenantId, callId: id, expiresAt });
    return { path: `/api/v1/recordings/${token}`, expiresAt };
  }

  /**
   * The audio behind a token (its only authority): a presigned object address for the gateway, or up to 1 MiB from
   * `offset` for callers reading through telephony (a gateway or a recording before 1.3).
   */
  async openRecording(
    token: string,
    offset: number,
    urlOnly = false,
  ): Promise<{ contentType: string; sizeBytes: number; data: Buffer; objectUrl: string }> {
    const check = this.d.tokens.verify(token, this.d.now());
    if (!check.ok) {
      throw check.why === 'expired'
        ? telephonyReasons.error('recording_link_expired', 'this recording link has expired; ask for a new one')
        : telephonyReasons.error('recording_link_invalid', 'this recording link is not valid');
    }
    // The signed grant names the tenant that asked for the link.
    const scope = scopeOfRecord(check.grant.tenantId);
    const callId = check.grant.callId;
    const call = await this.d.calls.get(scope, callId);
    if (!call?.hasRecording) throw notFound('recording');
    const ref = call.recording;
    const header = ref ?? (await this.d.recordings.legacyHeader(scope, callId));
    if (!header) throw notFound('recording');
    const objectUrl = ref ? await this.d.recordings.signedUrl(ref, OBJECT_URL_SECONDS) : '';
    if (urlOnly && objectUrl)
      return { contentType: header.contentType, sizeBytes: header.sizeBytes, data: Buffer.alloc(0), objectUrl };
    if (!Number.isInteger(offset) || offset < 0 || offset > header.sizeBytes)
      throw validationError('offset is outside the recording');
    const data =
      offset === header.sizeBytes ? Buffer.alloc(0) : await this.d.recordings.read(scope, callId, ref, offset);
    return { contentType: header.contentType, sizeBytes: header.sizeBytes, data, objectUrl };
  }
}

/** The feed's filters, checked again here: the service never trusts that a caller validated them. */
export function feedFilter(q: FeedQuery): CallFilter {
  const problems: { path: string; message: string }[] = [];
  if (q.direction !== undefined && !DIRECTIONS.includes(q.direction as Direction))
    problems.push({ path: 'direction', message: `must be one of ${DIRECTIONS.join(', ')}` });
  if (q.status !== undefined && !CALL_STATUSES.includes(q.status as CallStatus))
    problems.push({ path: 'status', message: `must be one of ${CALL_STATUSES.join(', ')}` });
  for (const f of ['agentId', 'campaignId'] as const)
    if (q[f] !== undefined && (q[f].length === 0 || q[f].length > MAX_ID))
      problems.push({ path: f, message: `must be 1–${MAX_ID} characters` });
  for (const f of ['startedAfter', 'startedBefore'] as const)
    if (q[f] && Number.isNaN(q[f].getTime())) problems.push({ path: f, message: 'must be a date-time' });
  if (q.startedAfter && q.startedBefore && q.startedAfter > q.startedBefore)
    problems.push({ path: 'startedAfter', message: 'must not be later than startedBefore' });
  if (problems.length > 0) throw validationError('invalid call filter', problems);
  return {
    ...(q.direction && { direction: q.direction as Direction }),
    ...(q.status && { status: q.status as CallStatus }),
    ...(q.agentId && { agentId: q.agentId }),
    ...(q.campaignId && { campaignId: q.campaignId }),
    ...(q.startedAfter && { startedAfter: q.startedAfter }),
    ...(q.startedBefore && { startedBefore: q.startedBefore }),
  };
}
