import { voiceapi } from '@voiceapi/proto';
import { webhookMessage, type WebhookMessage } from '../domain/messages';

/** `billing.call.v1` or `billing.usage.v1`. */
type BillingEvent = Pick<
  voiceapi.events.v1.BillingCallEvent | voiceapi.events.v1.BillingUsageEvent,
  'occurTime' | 'event'
>;
type LeadsEvent = voiceapi.events.v1.LeadsContactEvent;
type AgentsEvent = voiceapi.events.v1.AgentsEvent;
const { CallDirection } = voiceapi.events.v1;

/** Platform events → what tenants receive. Pure, so a redelivered event is the same webhook. */
export function fromBilling(event: BillingEvent, eventId: string): WebhookMessage | null {
  const at = event.occurTime ?? new Date(0);
  if (event.event?.$case === 'callBilled') {
    const b = event.event.callBilled;
    const direction = b.direction === CallDirection.CALL_DIRECTION_INBOUND ? 'inbound' : 'outbound';
    return webhookMessage(
      eventId,
      b.tenantId,
      direction === 'inbound' ? 'call.inbound.billed' : 'call.outbound.billed',
      at,
      {
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
      },
    );
  }
  if (event.event?.$case === 'creditsUsage') {
    const u = event.event.creditsUsage;
    return webhookMessage(eventId, u.tenantId, 'credits.usage', at, {
      transactionId: u.transactionId,
      type: u.type,
      credits: u.credits,
      balanceAfter: u.balanceAfter,
      ...(u.callId !== undefined && { callId: u.callId }),
      direction:
        u.direction === CallDirection.CALL_DIRECTION_INBOUND
          ? 'inbound'
          : u.direction === CallDirection.CALL_DIRECTION_OUTBOUND
            ? 'outbound'
            : null,
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

/**
 * A call's end with its charge → `call.*.billed` and `credits.usage`, under billing's own ids, so a call
 * billing 1.1 still announces too is one message each.
 */
export function fromTelephony(
  event: Pick<voiceapi.events.v1.TelephonyCallEvent, 'occurTime' | 'event'>,
): WebhookMessage[] {
  const ended =
    event.event?.$case === 'callEnded'
      ? event.event.callEnded
      : event.event?.$case === 'callSettled'
        ? event.event.callSettled.call
        : undefined;
  const charge = ended?.charge;
  if (!ended || !charge) return [];
  const at = charge.billTime ?? event.occurTime ?? new Date(0);
  const { callId, tenantId, direction } = ended;
  const facts = {
    ...(ended.contactId !== undefined && { contactId: ended.contactId }),
    ...(ended.campaignId !== undefined && { campaignId: ended.campaignId }),
    ...(ended.agentId !== undefined && { agentId: ended.agentId }),
  };
  const billed = fromBilling(
    {
      occurTime: at,
      event: {
        $case: 'callBilled',
        callBilled: {
          callId,
          tenantId,
          direction,
          billingStatus: charge.billingStatus,
          creditsCharged: charge.creditsCharged,
          ...(charge.creditsError !== undefined && { creditsError: charge.creditsError }),
          ...(charge.balanceAfter !== undefined && { balanceAfter: charge.balanceAfter }),
          ...(charge.transactionId !== undefined && { transactionId: charge.transactionId }),
          sandbox: ended.sandbox,
          ...(ended.endTime && { endTime: ended.endTime }),
          durationSeconds: ended.durationSeconds,
          ...facts,
          // Only an outbound call's number: an inbound caller's number is theirs.
          ...(direction === CallDirection.CALL_DIRECTION_OUTBOUND &&
            ended.fromNumber !== undefined && { fromNumber: ended.fromNumber }),
        },
      },
    },
    `billed:${callId}`,
  );
  const messages = billed ? [billed] : [];
  if (charge.transactionId !== undefined && charge.ledgerSeq !== undefined && charge.creditsCharged > 0) {
    const usage = fromBilling(
      {
        occurTime: at,
        event: {
          $case: 'creditsUsage',
          creditsUsage: {
            tenantId,
            transactionId: charge.transactionId,
            type: 'call_deduction',
            credits: charge.creditsCharged,
            balanceAfter: charge.balanceAfter ?? 0,
            callId,
            reference: `call:${callId}`,
            direction,
            ...facts,
          },
        },
      },
      `usage:${tenantId}:${charge.ledgerSeq}`,
    );
    if (usage) messages.push(usage);
  }
  return messages;
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
