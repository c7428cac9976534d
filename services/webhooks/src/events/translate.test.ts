import { voiceapi } from '@voiceapi/proto';
import { fromAgents, fromBilling, fromLeads, fromTelephony } from './translate';

const { BillingCallEvent, BillingUsageEvent, LeadsContactEvent, AgentsEvent, TelephonyCallEvent, CallDirection } =
  voiceapi.events.v1;
const at = new Date('2026-11-23T10:00:00Z');
const body = (m: { body: string } | null) =>
  JSON.parse(m!.body) as { type: string; timestamp: string; data: Record<string, unknown> };

describe('platform events → webhook messages', () => {
  it('a billed inbound call carries the ledger row, the charge and the balance after', () => {
    const event = BillingCallEvent.fromPartial({
      occurTime: at,
      event: {
        $case: 'callBilled',
        callBilled: {
          callId: 'c1',
          tenantId: 't1',
          direction: CallDirection.CALL_DIRECTION_INBOUND,
          billingStatus: 'charged',
          creditsCharged: 2,
          balanceAfter: 98,
          transactionId: 'tx1',
          sandbox: false,
          endTime: at,
          durationSeconds: 61,
          agentId: 'a1',
        },
      },
    });
    const m = fromBilling(event, 'billed:c1');
    expect(m).toMatchObject({ tenantId: 't1', type: 'call.inbound.billed' });
    expect(body(m)).toEqual({
      type: 'call.inbound.billed',
      timestamp: at.toISOString(),
      data: {
        callId: 'c1',
        direction: 'inbound',
        contactId: null,
        campaignId: null,
        agentId: 'a1',
        fromNumber: null,
        billingStatus: 'charged',
        creditsCharged: 2,
        balanceAfter: 98,
        transactionId: 'tx1',
        durationSeconds: 61,
        endedAt: at.toISOString(),
        sandbox: false,
      },
    });
  });

  it('an outbound call settled without a charge says why', () => {
    const event = BillingCallEvent.fromPartial({
      occurTime: at,
      event: {
        $case: 'callBilled',
        callBilled: {
          callId: 'c2',
          tenantId: 't1',
          direction: CallDirection.CALL_DIRECTION_OUTBOUND,
          billingStatus: 'failed',
          creditsCharged: 0,
          creditsError: 'insufficient_credits',
          sandbox: false,
          durationSeconds: 30,
        },
      },
    });
    expect(body(fromBilling(event, 'billed:c2'))).toMatchObject({
      type: 'call.outbound.billed',
      data: { billingStatus: 'failed', creditsError: 'insufficient_credits', creditsCharged: 0 },
    });
    expect(body(fromBilling(event, 'billed:c2')).data).not.toHaveProperty('balanceAfter');
  });

  it('credit usage, a contact’s status and a ready script', () => {
    const usage = BillingUsageEvent.fromPartial({
      occurTime: at,
      event: {
        $case: 'creditsUsage',
        creditsUsage: {
          tenantId: 't1',
          transactionId: 'tx2',
          type: 'knowledge_upload',
          credits: 3,
          balanceAfter: 95,
          reference: 'knowledge:f1',
        },
      },
    });
    expect(body(fromBilling(usage, 'usage:t1:7')).data).toEqual({
      transactionId: 'tx2',
      type: 'knowledge_upload',
      credits: 3,
      balanceAfter: 95,
      direction: null,
      contactId: null,
      campaignId: null,
      agentId: null,
      reference: 'knowledge:f1',
      sandbox: false,
    });
    const callUsage = BillingUsageEvent.fromPartial({
      occurTime: at,
      event: {
        $case: 'creditsUsage',
        creditsUsage: {
          tenantId: 't1',
          transactionId: 'tx3',
          type: 'call_deduction',
          credits: 2,
          balanceAfter: 93,
          reference: 'call:c3',
          callId: 'c3',
          direction: CallDirection.CALL_DIRECTION_OUTBOUND,
          contactId: 'k1',
          campaignId: 'p1',
        },
      },
    });
    expect(body(fromBilling(callUsage, 'usage:t1:8')).data).toMatchObject({
      transactionId: 'tx3',
      callId: 'c3',
      direction: 'outbound',
      contactId: 'k1',
      campaignId: 'p1',
      agentId: null,
    });
    const status = LeadsContactEvent.fromPartial({
      occurTime: at,
      event: {
        $case: 'contactStatusChanged',
        contactStatusChanged: {
          tenantId: 't1',
          contactId: 'k1',
          campaignId: 'p1',
          status: 'completed',
          previousStatus: 'in_progress',
          sandbox: true,
        },
      },
    });
    expect(body(fromLeads(status, 'e1'))).toEqual({
      type: 'contact.status_changed',
      timestamp: at.toISOString(),
      data: { contactId: 'k1', campaignId: 'p1', status: 'completed', previousStatus: 'in_progress', sandbox: true },
    });
    const ready = AgentsEvent.fromPartial({
      occurTime: at,
      event: { $case: 'scriptReady', scriptReady: { tenantId: 't1', agentId: 'a1', sandbox: false, generateTime: at } },
    });
    expect(body(fromAgents(ready, 'script-ready:a1:g1'))).toEqual({
      type: 'agent.script_ready',
      timestamp: at.toISOString(),
      data: { agentId: 'a1', inboundScriptStatus: 'ready', generatedAt: at.toISOString(), sandbox: false },
    });
  });

  it('ignores an event that carries nothing tenants are told about', () => {
    expect(fromLeads(LeadsContactEvent.fromPartial({ occurTime: at }), 'e2')).toBeNull();
    expect(fromBilling(BillingCallEvent.fromPartial({ occurTime: at }), 'e3')).toBeNull();
  });

  it('a call’s end with its charge gives the same billed webhook and usage as billing’s own events of them, under their ids', () => {
    const facts = {
      callId: 'c9',
      tenantId: 't1',
      direction: CallDirection.CALL_DIRECTION_OUTBOUND,
      sandbox: false,
      contactId: 'ct1',
      campaignId: 'cp1',
    };
    const charge = {
      billingStatus: 'charged',
      creditsCharged: 2,
      transactionId: 'tx9',
      ledgerSeq: 41,
      balanceAfter: 90,
      billTime: at,
    };
    const ended = {
      ...facts,
      durationSeconds: 61,
      startTime: at,
      endTime: at,
      holdFailed: false,
      free: false,
      outcome: 'completed',
      optOut: false,
      fromNumber: '+18885550100',
      toNumber: '+14155550123',
    };
    const fromEnd = fromTelephony(
      TelephonyCallEvent.fromPartial({ occurTime: at, event: { $case: 'callEnded', callEnded: { ...ended, charge } } }),
    );
    const billed = fromBilling(
      BillingCallEvent.fromPartial({
        occurTime: at,
        event: {
          $case: 'callBilled',
          callBilled: {
            ...facts,
            billingStatus: 'charged',
            creditsCharged: 2,
            balanceAfter: 90,
            transactionId: 'tx9',
            endTime: at,
            durationSeconds: 61,
            fromNumber: '+18885550100',
          },
        },
      }),
      'billed:c9',
    );
    const usage = fromBilling(
      BillingUsageEvent.fromPartial({
        occurTime: at,
        event: {
          $case: 'creditsUsage',
          creditsUsage: {
            tenantId: 't1',
            transactionId: 'tx9',
            type: 'call_deduction',
            credits: 2,
            balanceAfter: 90,
            callId: 'c9',
            reference: 'call:c9',
            direction: facts.direction,
            contactId: 'ct1',
            campaignId: 'cp1',
          },
        },
      }),
      'usage:t1:41',
    );
    expect(fromEnd).toEqual([billed, usage]);
    // A late settlement says the same; an end without a charge says nothing yet; a call not charged has no usage.
    expect(
      fromTelephony(
        TelephonyCallEvent.fromPartial({
          occurTime: at,
          event: { $case: 'callSettled', callSettled: { call: { ...ended, charge } } },
        }),
      ),
    ).toEqual([billed, usage]);
    expect(
      fromTelephony(TelephonyCallEvent.fromPartial({ occurTime: at, event: { $case: 'callEnded', callEnded: ended } })),
    ).toEqual([]);
    const skipped = fromTelephony(
      TelephonyCallEvent.fromPartial({
        occurTime: at,
        event: {
          $case: 'callEnded',
          callEnded: { ...ended, charge: { billingStatus: 'skipped', creditsCharged: 0, billTime: at } },
        },
      }),
    );
    expect(skipped.map((m) => body(m).type)).toEqual(['call.outbound.billed']);
  });
});
