import type { Outbox } from '@voiceapi/kit/events';
import { serviceMetrics } from '@voiceapi/kit/metrics';
import type { OpenedService } from '@voiceapi/kit/service';
import type { Config } from '../config';
import { leadEvents } from '../events/publish';
import { AcceptWriter } from '../usecases/accept-writer';
import { Campaigns } from '../usecases/campaigns';
import { ComplianceChecks } from '../usecases/compliance';
import { Contacts } from '../usecases/contacts';
import { CreditView } from '../usecases/credit-check';
import { Dialing } from '../usecases/dialing';
import { DoNotCall } from '../usecases/do-not-call';
import { EventRoutes } from '../usecases/event-routes';
import { LeadIngest } from '../usecases/leads';
import { ContactLifecycle } from '../usecases/lifecycle';
import { MessageFollowups, Messaging, RecordingMessageAdapter } from '../usecases/messaging';
import { Templates } from '../usecases/templates';
import type { Clients } from './clients';
import type { Stores } from './stores';

export type UseCases = ReturnType<typeof buildUseCases>;

/** The wallets' credit as leads sees it (kept current by a consumer) and (`api`) what the gRPC adapter serves. */
export function buildUseCases({ cfg, log }: OpenedService<Config>, stores: Stores, clients: Clients, outbox: Outbox) {
  const { campaigns, contacts, dnc, routes, templates, messages, schedule, followups } = stores;
  const now = () => new Date();
  const credits = new CreditView(clients.holdQuote);
  const checks = new ComplianceChecks(dnc);
  const announced = leadEvents(outbox);
  const lifecycleOfContacts = new ContactLifecycle(contacts, announced, clients.webhooks, now);
  const messaging = new Messaging({
    messages,
    contacts,
    lifecycle: lifecycleOfContacts,
    adapter: new RecordingMessageAdapter(),
    log,
    now,
  });
  const dialing = new Dialing({
    campaigns,
    contacts,
    followups,
    schedule,
    dnc,
    checks,
    lifecycle: lifecycleOfContacts,
    events: announced,
    messageFollowups: new MessageFollowups({ templates, messages, outbox: announced, now }),
    log,
    now,
  });
  const api = {
    campaigns: new Campaigns(campaigns, contacts, cfg.CALLING_WINDOW_DEFAULT, now),
    ingest: new LeadIngest({
      campaigns,
      contacts,
      routes,
      templates,
      messages,
      checks,
      credits,
      writer: new AcceptWriter({ contacts, messages, schedule, outbox: announced, log }),
      now,
      metrics: {
        leads: serviceMetrics('leads').counter('leads', {
          description: 'Leads by outcome: queued, scheduled, sandbox_accepted, or the reason refused',
        }),
      },
    }),
    contacts: new Contacts({
      contacts,
      followups,
      schedule,
      messages,
      lifecycle: lifecycleOfContacts,
      outbox: announced,
      now,
    }),
    routes: new EventRoutes(routes, campaigns, now),
    templates: new Templates(templates, now),
    doNotCall: new DoNotCall(dnc, now),
    messaging,
    dialing,
  };
  return { credits, api };
}
