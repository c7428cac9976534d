import { validationError } from '@voiceapi/kit/errors';
import { registerService, requireTenant, type ServiceRegistration, pageAsked } from '@voiceapi/kit/grpc';
import { type Page } from '@voiceapi/kit/mongo';
import { type Logger } from '@voiceapi/kit/service';
import { voiceapi } from '@voiceapi/proto';
import type { Call, CallDetails } from '../domain/call';
import type { Bucket } from '../domain/rollup';
import type { PhoneNumber } from '../domain/number';
import { formatCursor, type FeedFilter } from '../domain/call-feed';
import type { Analytics } from '../usecases/analytics';
import type { CallFeed } from '../usecases/call-feed';
import type { Calls } from '../usecases/calls';
import type { Inbound } from '../usecases/inbound';
import type { Concurrency } from '../usecases/concurrency';
import type { Numbers } from '../usecases/numbers';

export interface TelephonyUseCases {
  calls: Calls;
  feed: CallFeed;
  analytics: Analytics;
  numbers: Numbers;
  inbound: Inbound;
  concurrency: Concurrency;
  now: () => Date;
}

const page = <T>(p: Page<T>, req: { page: number; limit: number }) => ({
  page: req.page,
  limit: req.limit,
  total: p.total,
  hasMore: p.hasMore,
});

/** gRPC adapter: maps messages to use-case calls and domain objects back, nothing more. */
export function telephonyService(uc: TelephonyUseCases, log: Logger): ServiceRegistration {
  return registerService(
    'voiceapi.telephony.v1.TelephonyService',
    voiceapi.telephony.v1.TelephonyServiceService,
    {
      listCalls: async (req, ctx) => {
        const p = pageAsked(req.page);
        const res = await uc.calls.list(
          requireTenant(ctx),
          {
            ...(req.direction !== undefined && { direction: req.direction }),
            ...(req.status !== undefined && { status: req.status }),
            ...(req.agentId !== undefined && { agentId: req.agentId }),
            ...(req.campaignId !== undefined && { campaignId: req.campaignId }),
            ...(req.startedAfter && { startedAfter: req.startedAfter }),
            ...(req.startedBefore && { startedBefore: req.startedBefore }),
          },
          p.page,
          p.limit,
        );
        return { calls: res.items.map(callProto), page: page(res, p) };
      },
      listActiveCalls: async (_req, ctx) => ({ calls: (await uc.calls.active(requireTenant(ctx))).map(callProto) }),
      readCallFeed: async (req, ctx) => {
        const filter: FeedFilter = {
          ...((req.direction === 'inbound' || req.direction === 'outbound') && { direction: req.direction }),
          ...(req.campaignId !== undefined && { campaignId: req.campaignId }),
          ...(req.agentId !== undefined && { agentId: req.agentId }),
        };
        if (req.direction !== undefined && filter.direction === undefined)
          throw validationError('direction must be inbound or outbound', [
            { path: 'direction', message: 'inbound or outbound' },
          ]);
        const r = await uc.feed.read(
          requireTenant(ctx),
          req.after || undefined,
          filter,
          Math.min(500, Math.max(1, req.limit || 100)),
          Math.min(10_000, Math.max(0, req.waitMs)),
        );
        return {
          // Each change's call is the message announced with it, kept as sent.
          changes: r.changes.map((e) => ({
            cursor: formatCursor({ seq: e.seq, atMs: e.at.getTime() }),
            change: e.change,
            call: e.call as unknown as voiceapi.telephony.v1.Call,
            occurTime: e.at,
          })),
          cursor: r.cursor,
          reset: r.reset,
        };
      },
      getCall: async (req, ctx) => {
        const { call, details } = await uc.calls.get(requireTenant(ctx), req.callId, req.contactId);
        return { call: callProto(call), ...detailsProto(details) };
      },
      listConversations: async (req, ctx) => {
        const found = await uc.calls.conversations(requireTenant(ctx), req.callIds);
        return { conversations: [...found].map(([callId, d]) => ({ callId, ...detailsProto(d) })) };
      },
      listContactCalls: async (req, ctx) => {
        const p = pageAsked(req.page);
        const res = await uc.calls.ofContact(requireTenant(ctx), req.contactId, p.page, p.limit);
        return { calls: res.items.map(callProto), page: page(res, p) };
      },
      createRecordingLink: async (req, ctx) => {
        const link = await uc.calls.recordingLink(requireTenant(ctx), req.callId);
        return { path: link.path, expireTime: link.expiresAt };
      },
      openRecording: async (req) => uc.calls.openRecording(req.token, req.offset, req.urlOnly),
      callAnalytics: async (req, ctx) => {
        const to = req.to ?? uc.now();
        const from = req.from ?? new Date(to.getTime() - 30 * 24 * 3600_000);
        const buckets = await uc.analytics.calls(requireTenant(ctx), {
          groupBy: req.groupBy,
          from,
          to,
          ...(req.direction !== undefined && { direction: req.direction }),
          ...(req.timeZone !== undefined && { timeZone: req.timeZone }),
        });
        return { buckets: buckets.map(bucketProto) };
      },
      listNumbers: async (req, ctx) => {
        const p = pageAsked(req.page);
        const res = await uc.numbers.list(requireTenant(ctx), p.page, p.limit);
        return { numbers: res.items.map(numberProto), page: page(res, p) };
      },
      listAvailableNumbers: async (req, ctx) => ({
        numbers: (await uc.numbers.available(requireTenant(ctx), req.countryIso, req.contains, req.limit)).map(
          numberProto,
        ),
      }),
      purchaseNumber: async (req, ctx) => {
        const r = await uc.numbers.purchase(requireTenant(ctx), req.phoneNumber);
        if (r.status === 'sandbox_accepted') return { status: r.status, creditsCharged: 0, balanceAfter: 0 };
        return {
          status: r.status,
          number: numberProto(r.number),
          creditsCharged: r.creditsCharged,
          balanceAfter: r.balanceAfter,
        };
      },
      getOwnedNumber: async (req, ctx) => {
        if (!req.id && !req.phoneNumber) throw validationError('name the number by id or phone_number');
        return {
          number: numberProto(
            await uc.numbers.owned(requireTenant(ctx), {
              ...(req.id && { id: req.id }),
              ...(req.phoneNumber && { phoneNumber: req.phoneNumber }),
            }),
          ),
        };
      },
      addPoolNumber: async (req) => ({
        number: numberProto(await uc.numbers.addToPool(req.phoneNumber, req.countryIso, req.monthlyCredits)),
      }),
      assignNumber: async (req, ctx) => ({
        number: numberProto(await uc.numbers.assign(requireTenant(ctx), req.phoneNumber, req.countryIso)),
      }),
      setConcurrency: async (req, ctx) => ({
        maxConcurrentCalls: await uc.concurrency.set(requireTenant(ctx), req.maxConcurrentCalls),
      }),
      simulateInboundCall: async (req, ctx) => ({
        callId: await uc.inbound.simulate(requireTenant(ctx), req.toNumber, req.fromNumber, req.durationSeconds),
      }),
    },
    log,
  );
}

export function callProto(c: Call): voiceapi.telephony.v1.Call {
  return {
    id: c.id,
    direction: c.direction,
    callId: c.id,
    ...(c.dialId && { callSessionId: c.dialId }),
    ...(c.carrierCallId && { callSid: c.carrierCallId }),
    status: c.status,
    ...(c.outcome && { outcome: c.outcome }),
    startTime: c.startedAt,
    ...(c.endedAt && { endTime: c.endedAt }),
    durationSeconds: c.durationSeconds,
    ...(c.fromNumber && { fromNumber: c.fromNumber }),
    ...(c.toNumber && { toNumber: c.toNumber }),
    ...(c.agentId && { agentId: c.agentId }),
    ...(c.agentName && { agentName: c.agentName }),
    ...(c.campaignId && { campaignId: c.campaignId }),
    ...(c.contactId && { contactId: c.contactId }),
    billingStatus: c.billingStatus,
    ...(c.billingStatus !== 'pending' && c.creditsCharged !== undefined && { creditsCharged: c.creditsCharged }),
    ...(c.creditsError && { creditsError: c.creditsError }),
    ...(c.balanceAfter !== undefined && { balanceAfter: c.balanceAfter }),
    hasTranscript: c.hasTranscript,
    hasAnalysis: c.hasAnalysis,
    hasRecording: c.hasRecording,
    ...(c.summary && { summary: c.summary }),
    sandbox: c.sandbox,
    ...(c.endReason && { endReason: c.endReason }),
  };
}

function detailsProto(d: CallDetails | null): Pick<voiceapi.telephony.v1.GetCallResponse, 'transcript' | 'analysis'> {
  return { transcript: d?.transcript ?? [], ...(d?.analysis && { analysis: d.analysis }) };
}

function bucketProto(b: Bucket): voiceapi.telephony.v1.AnalyticsBucket {
  return {
    ...(b.key !== null && { key: b.key }),
    calls: b.calls,
    completed: b.completed,
    durationSeconds: b.durationSeconds,
    avgDurationSeconds: b.avgDurationSeconds,
    creditsCharged: b.creditsCharged,
  };
}

function numberProto(n: PhoneNumber): voiceapi.telephony.v1.PhoneNumber {
  return {
    id: n.id,
    phoneNumber: n.phoneNumber,
    countryIso: n.countryIso,
    status: n.status,
    ...(n.agentId && { agentId: n.agentId }),
    ...(n.purchasedAt && { purchaseTime: n.purchasedAt }),
    monthlyCredits: n.monthlyCredits,
  };
}
