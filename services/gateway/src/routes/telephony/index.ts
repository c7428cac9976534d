// Over 300 lines because it holds the routes of one area (calls, the live stream, numbers, analytics, recordings), one handler each, as every route area has its own file.
import { isReason, notFound, objectStoreUnavailable, scopeOfRecord } from '@voiceapi/kit';
import type { ServiceClients } from '../../clients';
import { withBodyFields } from '../../http/errors';
import { Pagination, pagination } from '../../http/pagination';
import { refusal } from '../../http/refusals';
import type { BinaryResult } from '../../http/result';
import { defineRoute } from '../../http/route';
import type { CallStreams } from './call-stream';
import { z } from '../../http/zod';
import { bucketJson, callDetailJson, callJson, numberJson } from './mappers';
import {
  AnalyticsBucket,
  AnalyticsQuery,
  AvailableQuery,
  CallDetail,
  CallIdParam,
  CallsQuery,
  CallStreamHeaders,
  CallStreamQuery,
  CallSummary,
  ContactCallParams,
  ContactCallsQuery,
  PhoneNumber,
  Purchase,
  Purchased,
  RecordingLink,
  RecordingToken,
  SandboxAccepted,
} from './schemas';

const DAY_MS = 86_400_000;
const page = (query: { page: number; limit: number }, p: { total?: number; hasMore?: boolean } | undefined) =>
  pagination({ page: query.page, limit: query.limit, total: p?.total ?? 0, hasMore: p?.hasMore ?? false });

/** The unified call feed, a contact's calls, recordings, analytics and numbers, owned by the telephony service. */
export function telephonyRoutes(clients: ServiceClients, streams: CallStreams) {
  const calls = 'Calls';
  const contacts = 'Contacts';
  return [
    defineRoute({
      method: 'get',
      path: '/calls',
      tag: calls,
      summary: 'The unified inbound and outbound call feed',
      description:
        'Newest first. Filters combine. `startedAfter` must not be later than `startedBefore`; a parameter given as an object or list ' +
        '(`status[$ne]=x`, `status=a&status=b`) or not listed here is refused with 400. `billingStatus` is `pending` right after a call ends; ' +
        'the charge is posted asynchronously (poll again, or wait for the billed webhook).',
      scopes: ['calls:read'],
      query: CallsQuery,
      responses: {
        200: {
          description: 'A page of calls',
          schema: z.object({ calls: z.array(CallSummary), pagination: Pagination }),
        },
      },
      handler: async ({ query }, { call }) => {
        const res = await clients.telephony.listCalls(
          {
            page: { page: query.page, limit: query.limit },
            ...(query.direction && { direction: query.direction }),
            ...(query.status && { status: query.status }),
            ...(query.agentId && { agentId: query.agentId }),
            ...(query.campaignId && { campaignId: query.campaignId }),
            ...(query.startedAfter && { startedAfter: new Date(query.startedAfter) }),
            ...(query.startedBefore && { startedBefore: new Date(query.startedBefore) }),
          },
          call,
        );
        return { status: 200, body: { calls: res.calls.map(callJson), pagination: page(query, res.page) } };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/calls/active',
      tag: calls,
      operationId: 'listActiveCalls',
      summary: 'Calls queued, ringing or in progress',
      scopes: ['calls:read'],
      responses: {
        200: {
          description: 'The calls holding a line of the tenant’s concurrency package, newest first',
          schema: z.object({ calls: z.array(CallSummary) }),
        },
      },
      handler: async (_input, { call }) => ({
        status: 200,
        body: { calls: (await clients.telephony.listActiveCalls({}, call)).calls.map(callJson) },
      }),
    }),
    defineRoute({
      method: 'get',
      path: '/calls/stream',
      tag: calls,
      operationId: 'streamCalls',
      summary: 'Follow the tenant’s calls live (server-sent events)',
      description:
        'A `text/event-stream` of the tenant’s call lifecycle, inbound and outbound: one event per change (`call.started`, `call.ringing`, ' +
        '`call.answered`, `call.ended`, `call.billed`), its `data` the call as `GET /calls` shows it right after the change, its `id` a cursor. ' +
        'Reconnect with `Last-Event-ID` (EventSource does) to receive what was missed, up to 24 hours back, and nothing twice; an older one ' +
        'gets one `stream.reset` event, then the stream goes on from now. A comment line every 15 s keeps an idle connection open. A client ' +
        'that reads nothing for a minute is dropped with a last `stream.dropped` event. A stopping gateway ends its streams; reconnect with ' +
        '`Last-Event-ID` (any replica serves any stream). Sandbox calls carry `sandbox: true`. At most 5 open streams per key.',
      scopes: ['calls:read'],
      query: CallStreamQuery,
      headers: CallStreamHeaders,
      responses: {
        200: {
          description:
            'The stream: `id: <cursor>`, `event: <change>`, `data: <call as JSON>`, a blank line; comments start with `:`',
          binary: ['text/event-stream'],
        },
      },
      errors: {
        400: 'A `Last-Event-ID` this stream did not give (`validation_error`), or a filter that does not fit',
        429: 'More than 5 open streams on this key (`rate_limited`)',
      },
      handler: async ({ query }, { call, auth, headers }) => {
        const lastEventId = headers?.['Last-Event-ID'];
        try {
          const stream = await streams.start({
            scope: scopeOfRecord(auth!.tenantId, auth!.mode),
            keyId: auth!.keyId,
            call,
            ...(lastEventId !== undefined && { lastEventId }),
            filter: query,
          });
          return {
            status: 200,
            contentType: 'text/event-stream; charset=utf-8',
            headers: { 'Cache-Control': 'no-store', 'X-Accel-Buffering': 'no' },
            stream,
          };
        } catch (err) {
          // The feed refuses a cursor it did not give: named as the tenant sent it.
          if (isReason(err, 'validation_error') && err.details?.some((d) => d.path === 'after')) {
            throw refusal('validation_error', 'Last-Event-ID is not a cursor this stream gave', [
              { path: 'header.Last-Event-ID', message: 'not a cursor of this stream' },
            ]);
          }
          throw err;
        }
      },
    }),
    defineRoute({
      method: 'get',
      path: '/calls/{id}/recording',
      tag: calls,
      operationId: 'getCallRecordingLink',
      summary: 'A short-lived signed link to a call’s recording',
      description:
        'The `url` needs no key and works until `expiresAt` (at most 15 minutes); an altered link is refused (403 `recording_link_invalid`), an expired one 410 `recording_link_expired`.',
      scopes: ['recordings:read'],
      params: CallIdParam,
      responses: { 200: { description: 'The signed link', schema: RecordingLink } },
      errors: { 404: 'No such call for this tenant, or it has no recording (`not_found`)' },
      handler: async ({ params }, { call, requestBase }) => {
        const link = await clients.telephony.createRecordingLink({ callId: params.id }, call);
        return {
          status: 200,
          body: { url: `${requestBase}${link.path}`, expiresAt: (link.expireTime ?? new Date()).toISOString() },
        };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/contacts/{id}/calls',
      tag: contacts,
      summary: 'A contact’s calls',
      scopes: ['leads:read'],
      params: ContactCallParams.pick({ id: true }),
      query: ContactCallsQuery,
      responses: {
        200: {
          description: 'A page of the contact’s calls, newest first',
          schema: z.object({ calls: z.array(CallSummary), pagination: Pagination }),
        },
      },
      errors: { 404: 'No such contact for this tenant (`not_found`)' },
      handler: async ({ params, query }, { call }) => {
        await clients.leads.getContact({ id: params.id }, call);
        const res = await clients.telephony.listContactCalls(
          { contactId: params.id, page: { page: query.page, limit: query.limit } },
          call,
        );
        return { status: 200, body: { calls: res.calls.map(callJson), pagination: page(query, res.page) } };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/contacts/{id}/calls/{callId}',
      tag: contacts,
      summary: 'One call of a contact, with its transcript and analysis',
      scopes: ['leads:read'],
      params: ContactCallParams,
      responses: { 200: { description: 'The call', schema: z.object({ call: CallDetail }) } },
      errors: { 404: 'No such contact for this tenant, or no such call of it (`not_found`)' },
      handler: async ({ params }, { call }) => {
        await clients.leads.getContact({ id: params.id }, call);
        return {
          status: 200,
          body: {
            call: callDetailJson(
              await clients.telephony.getCall({ callId: params.callId, contactId: params.id }, call),
            ),
          },
        };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/analytics/calls',
      tag: 'Analytics',
      operationId: 'getCallAnalytics',
      summary: 'Call aggregates by day, agent or campaign',
      description:
        'Read from rollups kept as calls end and are billed (per quarter hour), never by scanning calls. A call counts in the quarter hour it started; ' +
        '`from` is applied at that granularity. Days are formed in `timezone` (UTC by default). The range is at most 366 days; by default the last 30.',
      scopes: ['analytics:read'],
      query: AnalyticsQuery,
      responses: {
        200: {
          description: 'The buckets',
          schema: z.object({ groupBy: AnalyticsQuery.shape.groupBy, buckets: z.array(AnalyticsBucket) }),
        },
      },
      handler: async ({ query }, { call }) => {
        const to = query.to ? new Date(query.to) : new Date();
        const from = query.from ? new Date(query.from) : new Date(to.getTime() - 30 * DAY_MS);
        const res = await clients.telephony.callAnalytics(
          {
            groupBy: query.groupBy,
            from,
            to,
            ...(query.direction && { direction: query.direction }),
            ...(query.timezone && { timeZone: query.timezone }),
          },
          call,
        );
        return { status: 200, body: { groupBy: query.groupBy, buckets: res.buckets.map(bucketJson) } };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/numbers',
      tag: 'Numbers',
      summary: 'The tenant’s phone numbers',
      scopes: ['inbound:read'],
      query: ContactCallsQuery,
      responses: {
        200: {
          description: 'A page of owned numbers, newest first',
          schema: z.object({ numbers: z.array(PhoneNumber), pagination: Pagination }),
        },
      },
      handler: async ({ query }, { call }) => {
        const res = await clients.telephony.listNumbers({ page: { page: query.page, limit: query.limit } }, call);
        return { status: 200, body: { numbers: res.numbers.map(numberJson), pagination: page(query, res.page) } };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/numbers/available',
      tag: 'Numbers',
      operationId: 'listAvailableNumbers',
      summary: 'Pool numbers for sale',
      scopes: ['inbound:read'],
      query: AvailableQuery,
      responses: {
        200: {
          description: 'Numbers of the pool, in number order',
          schema: z.object({ numbers: z.array(PhoneNumber) }),
        },
      },
      handler: async ({ query }, { call }) => {
        const res = await clients.telephony.listAvailableNumbers(
          {
            limit: query.limit,
            ...(query.countryIso && { countryIso: query.countryIso }),
            ...(query.contains && { contains: query.contains }),
          },
          call,
        );
        return { status: 200, body: { numbers: res.numbers.map(numberJson) } };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/numbers/purchase',
      tag: 'Numbers',
      summary: 'Buy a pool number',
      description:
        'Debits the number’s `monthlyCredits` (a `number_purchase` ledger row). A number is sold once: whoever buys it first gets it, however many ' +
        'buy at the same instant. Sandbox keys get 202 `sandbox_accepted` and nothing changes.',
      operationId: 'purchaseNumber',
      scopes: ['inbound:write'],
      body: Purchase,
      responses: {
        201: { description: 'Bought', schema: Purchased },
        202: { description: 'Sandbox: accepted, nothing bought or charged', schema: SandboxAccepted },
      },
      errors: {
        402: 'The wallet cannot cover the number’s monthly credits (`insufficient_credits`)',
        409: 'Some tenant owns the number already, this one included (`number_already_owned`)',
        422: 'The number is not in the pool (`number_not_found`)',
      },
      handler: async ({ body }, { call }) => {
        const res = await withBodyFields(clients.telephony.purchaseNumber({ phoneNumber: body.phoneNumber }, call));
        if (res.status === 'sandbox_accepted') return { status: 202, body: { status: 'sandbox_accepted' as const } };
        return {
          status: 201,
          body: { number: numberJson(res.number), creditsCharged: res.creditsCharged, balanceAfter: res.balanceAfter },
        };
      },
    }),
  ];
}

/** Served without a key: the signed token is the authorisation (the kill switch still applies). */
export function recordingRoutes(clients: ServiceClients) {
  return [
    defineRoute({
      method: 'get',
      path: '/recordings/{token}',
      tag: 'Calls',
      operationId: 'getRecording',
      summary: 'A call’s recording, by its signed link',
      description:
        'No key: the link from `GET /calls/{id}/recording` is the authorisation. The audio is streamed with its content type; one byte range (`Range: bytes=…`) is answered 206 with `Content-Range`.',
      params: RecordingToken,
      responses: {
        200: { description: 'The audio', binary: ['audio/wav', 'audio/*'] },
        206: {
          description: 'The byte range asked for (`Range`), with `Content-Range`',
          binary: ['audio/wav', 'audio/*'],
        },
      },
      errors: {
        403: 'The link was altered or truncated (`recording_link_invalid`)',
        404: 'The recording is gone (`not_found`)',
        410: 'The link expired (`recording_link_expired`)',
      },
      headers: RecordingRangeHeader,
      handler: async ({ params }, { call, headers }) => {
        // Asked before the status line: a bad token answers the JSON error.
        const first = await clients.telephony.openRecording({ token: params.token, offset: 0, urlOnly: true }, call);
        const range = headers?.range && SINGLE_RANGE.test(headers.range) ? headers.range : undefined;
        if (first.objectUrl) return fromBucket(first.objectUrl, first.contentType, range);
        // A recording kept in the operational store (before telephony 1.3): read through telephony, whole.
        async function* parts(): AsyncGenerator<Uint8Array> {
          let offset = first.data.length;
          yield first.data;
          while (offset < first.sizeBytes) {
            const next = await clients.telephony.openRecording({ token: params.token, offset, urlOnly: false }, call);
            if (next.data.length === 0) throw new Error('recording ended early');
            offset += next.data.length;
            yield next.data;
          }
        }
        return {
          status: 200,
          contentType: first.contentType,
          length: first.sizeBytes,
          headers: { 'Cache-Control': 'private, no-store' },
          stream: parts(),
        };
      },
    }),
  ];
}

/** One byte range (`bytes=0-99`, `bytes=100-`, `bytes=-500`); any other Range is ignored, as HTTP allows. */
const SINGLE_RANGE = /^bytes=(\d+-\d*|-\d+)$/;
const RecordingRangeHeader = z.object({
  range: z
    .string()
    .optional()
    .describe(
      'One byte range (`bytes=0-1023`): answered 206 with that part. Any other form is ignored (200, the whole recording).',
    ),
});

/**
 * The audio streamed from object storage by the presigned address telephony gave (valid a minute;
 * the store's keys never leave telephony), with the tenant's range. A range the recording cannot
 * satisfy is ignored (HTTP lets a server do so): the whole recording, 200.
 */
async function fromBucket(url: string, contentType: string, range: string | undefined): Promise<BinaryResult> {
  const read = (headers: Record<string, string>) =>
    fetch(url, { headers }).catch((err: unknown) => {
      throw objectStoreUnavailable(err);
    });
  let res = await read(range ? { Range: range } : {});
  if (res.status === 416) {
    await res.body?.cancel();
    res = await read({});
  }
  if ((res.status !== 200 && res.status !== 206) || !res.body) {
    await res.body?.cancel();
    // Gone since telephony signed it (the contact erased): as any recording that is gone.
    if (res.status === 404) throw notFound('recording');
    throw objectStoreUnavailable(
      Object.assign(new Error(`the object store answered ${res.status} for a recording`), {
        $metadata: { httpStatusCode: res.status >= 500 ? res.status : 502 },
      }),
    );
  }
  const contentRange = res.headers.get('content-range');
  return {
    status: res.status,
    contentType,
    length: Number(res.headers.get('content-length')),
    headers: {
      'Cache-Control': 'private, no-store',
      'Accept-Ranges': 'bytes',
      ...(res.status === 206 && contentRange && { 'Content-Range': contentRange }),
    },
    stream: res.body as unknown as AsyncIterable<Uint8Array>,
  };
}
