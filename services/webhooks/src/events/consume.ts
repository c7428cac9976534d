import type { EventSubscriber } from '@voiceapi/kit/events';
import { voiceapi } from '@voiceapi/proto';
import type { WebhookMessage } from '../domain/messages';
import type { FanOut } from '../usecases/fanout';
import { fromAgents, fromBilling, fromLeads, fromTelephony } from './translate';

const { BillingCallEvent, BillingUsageEvent, LeadsContactEvent, AgentsEvent, TelephonyCallEvent } = voiceapi.events.v1;

/**
 * The domain streams webhooks deliver from. No inbox: the fan-out is idempotent by the ids it
 * writes (a message's id comes from the event's, a delivery's from the endpoint's and the
 * message's); an inbox would cost a write per event for nothing.
 */
export function deliverDomainEvents(subscriber: EventSubscriber, fanOut: FanOut): EventSubscriber {
  const publish = async (message: WebhookMessage | null) => {
    if (message) await fanOut.publish(message);
  };
  // The streams of each kind it delivers. `billing.v1` and `leads.v1` (every kind together) are read no more since
  // webhooks 1.3.0: billing 1.2.0 and 1.2.1, and leads 1.2.0 to 1.3.1, shipped without writing them (decision 0135).
  return (
    subscriber
      .on(BillingCallEvent, (event, meta) => publish(fromBilling(event, meta.eventId)))
      .on(BillingUsageEvent, (event, meta) => publish(fromBilling(event, meta.eventId)))
      .on(LeadsContactEvent, (event, meta) => publish(fromLeads(event, meta.eventId)))
      .on(AgentsEvent, (event, meta) => publish(fromAgents(event, meta.eventId)))
      // A call's end carries its charge: its billed webhook and its usage, under billing's ids.
      .on(TelephonyCallEvent, async (event) => {
        for (const message of fromTelephony(event)) await publish(message);
      })
  );
}
