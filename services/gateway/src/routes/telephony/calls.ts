// The call feed routes: `GET /calls`, `GET /calls/active` and `GET /calls/stream` (server-sent events).
import { isReason } from '@voiceapi/kit/errors';
import { scopeOfRecord } from '@voiceapi/kit/grpc';
import type { ServiceClients } from '../../clients';
import { Pagination, pagination } from '../../http/pagination';
import { refusal } from '../../http/refusals';
import { defineRoute } from '../../http/route';
import { z } from '../../http/zod';
import type { CallStreams } from './call-stream';
import { callJson } from './mappers';
import { CallsQuery, CallStreamHeaders, CallStreamQuery, CallSummary } from './schemas';

/** The unified inbound and outbound call feed: a page of it, the active calls, and the live stream. */
export function callRoutes(clients: ServiceClients, streams: CallStreams) {
  const calls = 'Calls';
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
        return { status: 200, body: { calls: res.calls.map(callJson), pagination: pagination(query, res.page) } };
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
  ];
}
