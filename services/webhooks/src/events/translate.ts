import { voiceapi } from '@voiceapi/proto';
import { webhookMessage, type WebhookMessage } from '../domain/messages';

/** An envelope of billing's that carries call outcomes or credit usage (`billing.v1`, `billing.call.v1`, `billing.usage.v1`): the same events either way. */
type BillingEvent = Pick<voiceapi.events.v1.BillingEvent | voiceapi.events.v1.BillingCallEvent | voiceapi.events.v1.BillingUsageEvent, 'occurTime' | 'event'>;
/** `leads.v1` or `leads.contact.v1`. */
type LeadsEvent = Pick<voiceapi.events.v1.LeadsEvent | voiceapi.events.v1.LeadsContactEvent, 'occurTime' | 'event'>;
type AgentsEvent = voiceapi.events.v1.AgentsEvent;
const { CallDirection } = voiceapi.events.v1;

/**
 * Platform events → what tenants receive. `data` carries the ids a tenant can look up through the
 * API and `sandbox` (true when a sandbox key caused it). Pure: the same event always gives the same
 * message, which is what makes a redelivered event the same webhook.
 */
export function fromBilling(event: BillingEvent, eventId: string): WebhookMessage | null {
  const at = event.occurTime ?? new Date(0);
  if (event.event?.$case === 'callBilled') {
    const b = event.event.callBilled;
    const direction = b.direction === CallDirection.CALL_DIRECTION_INBOUND ? 'inbound' : 'outbound';
    return webhookMessage(eventId, b.tenantId, direction === 'inbound' ? 'call.inbound.billed' : 'call.outbound.billed', at, {
      callId: b.callId,
      direction,
      contactId: b.contactId ?? null,
      campaignId: b.campaignId ?? null,
      agentId: b.agentId ?? null,
      fromNumber: b.fromNumber ?? null,
      billingStatus: b.billingStatus,
      creditsCharged: b.creditsCharged,
      ...(b.balanceAfter !== undefined && { balanceAfter: b.balanceAfter }),
      ...(b.transactionId !== undefined && { transactionId: b.transactionId }),
      ...(b.creditsError !== undefined && { creditsError: b.creditsError }),
      durationSeconds: b.durationSeconds,
      ...(b.endTime && { endedAt: b.endTime.toISOString() }),
      sandbox: b.sandbox,
    });
  }
  if (event.event?.$case === 'creditsUsage') {
    const u = event.event.creditsUsage;
    return webhookMessage(eventId, u.tenantId, 'credits.usage', at, {
      transactionId: u.transactionId,
      type: u.type,
      credits: u.credits,
      balanceAfter: u.balanceAfter,
      ...(u.callId !== undefined && { callId: u.callId }),
      direction: u.direction === CallDirection.CALL_DIRECTION_INBOUND ? 'inbound' : u.direction === CallDirection.CALL_DIRECTION_OUTBOUND ? 'outbound' : null,
      contactId: u.contactId ?? null,
      campaignId: u.campaignId ?? null,
      agentId: u.agentId ?? null,
      reference: u.reference,
      // Sandbox keys never spend.
      sandbox: false,
    });
  }
  return null;
}

export function fromLeads(event: LeadsEvent, eventId: string): WebhookMessage | null {
  if (event.event?.$case !== 'contactStatusChanged') return null;
  const c = event.event.contactStatusChanged;
  return webhookMessage(eventId, c.tenantId, 'contact.status_changed', event.occurTime ?? new Date(0), {
    contactId: c.contactId,
    campaignId: c.campaignId,
    status: c.status,
    previousStatus: c.previousStatus,
    ...(c.endReason !== undefined && { endReason: c.endReason }),
    sandbox: c.sandbox,
  });
}

export function fromAgents(event: AgentsEvent, eventId: string): WebhookMessage | null {
  if (event.event?.$case !== 'scriptReady') return null;
  const s = event.event.scriptReady;
  return webhookMessage(eventId, s.tenantId, 'agent.script_ready', event.occurTime ?? new Date(0), {
    agentId: s.agentId,
    inboundScriptStatus: 'ready',
    ...(s.generateTime && { generatedAt: s.generateTime.toISOString() }),
    sandbox: s.sandbox,
  });
}
