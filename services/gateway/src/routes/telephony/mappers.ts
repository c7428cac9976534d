import type { voiceapi } from '@voiceapi/proto';
import type { z } from '../../http/zod';
import type { AnalyticsBucket, CallDetail, CallSummary, PhoneNumber } from './schemas';

/** The telephony service's messages → the JSON of schemas.ts. */

type T = typeof voiceapi.telephony.v1;
type Proto<K extends keyof T> = T[K] extends { decode(...a: never[]): infer M } ? M : never;
type Json<S extends z.ZodType> = z.infer<S>;

const isoOrNull = (d: Date | undefined): string | null => (d ? d.toISOString() : null);

function need<V>(v: V | undefined, what: string): V {
  if (v === undefined) throw new Error(`telephony answered without ${what}`);
  return v;
}

export function callJson(c: Proto<'Call'> | undefined): Json<typeof CallSummary> {
  const x = need(c, 'a call');
  return {
    id: x.id,
    direction: x.direction as Json<typeof CallSummary>['direction'],
    callId: x.callId ?? null,
    callSessionId: x.callSessionId ?? null,
    callSid: x.callSid ?? null,
    status: (x.status || null) as Json<typeof CallSummary>['status'],
    outcome: (x.outcome ?? null) as Json<typeof CallSummary>['outcome'],
    startedAt: isoOrNull(x.startTime),
    endedAt: isoOrNull(x.endTime),
    durationSeconds: x.durationSeconds,
    fromNumber: x.fromNumber ?? null,
    toNumber: x.toNumber ?? null,
    agentId: x.agentId ?? null,
    agentName: x.agentName ?? null,
    campaignId: x.campaignId ?? null,
    contactId: x.contactId ?? null,
    billingStatus: x.billingStatus as Json<typeof CallSummary>['billingStatus'],
    creditsCharged: x.creditsCharged ?? null,
    creditsError: x.creditsError ?? null,
    balanceAfter: x.balanceAfter ?? null,
    hasTranscript: x.hasTranscript,
    hasAnalysis: x.hasAnalysis,
    hasRecording: x.hasRecording,
    summary: x.summary ?? null,
  };
}

export function callDetailJson(r: Proto<'GetCallResponse'>): Json<typeof CallDetail> {
  return { ...callJson(r.call), ...conversationJson(r) };
}

/** A call's transcript and analysis (also shown on its contact). */
export function conversationJson(
  r: Pick<Proto<'GetCallResponse'>, 'transcript' | 'analysis'>,
): Pick<Json<typeof CallDetail>, 'transcript' | 'analysis'> {
  return {
    transcript: r.transcript.map((t) => ({
      role: t.role as 'agent' | 'caller',
      text: t.text,
      at: isoOrNull(t.at) ?? '',
    })),
    analysis: r.analysis
      ? {
          summary: r.analysis.summary,
          sentiment: r.analysis.sentiment as 'positive' | 'neutral' | 'negative',
          outcome: r.analysis.outcome,
          optOut: r.analysis.optOut,
        }
      : null,
  };
}

export function bucketJson(b: Proto<'AnalyticsBucket'>): Json<typeof AnalyticsBucket> {
  return {
    key: b.key ?? null,
    calls: b.calls,
    completed: b.completed,
    durationSeconds: b.durationSeconds,
    avgDurationSeconds: b.avgDurationSeconds,
    creditsCharged: b.creditsCharged,
  };
}

export function numberJson(n: Proto<'PhoneNumber'> | undefined): Json<typeof PhoneNumber> {
  const x = need(n, 'a number');
  return {
    id: x.id,
    phoneNumber: x.phoneNumber,
    countryIso: x.countryIso,
    status: x.status as 'active' | 'available',
    agentId: x.agentId ?? null,
    purchasedAt: isoOrNull(x.purchaseTime),
    monthlyCredits: x.monthlyCredits,
  };
}
