import {
  broadcastGroup,
  broadcastGroupPrefix,
  consumerGroup,
  createPromiseClient,
  EventSubscriber,
  Lease,
  openService,
  removeIdleBroadcastGroups,
  retryTransient,
  runAsMain,
  serveGrpc,
  serviceMetrics,
  startEvents,
  Worker,
  type Logger,
} from '@voiceapi/kit';
import { voiceapi } from '@voiceapi/proto';
import { billingHoldQuote } from './clients/billing';
import { webhookReaders } from './clients/webhooks';
import { readConfig } from './config';
import { followCallOutcomes, followCredit, sendRequestedMessages } from './events/consume';
import { leadsService } from './grpc/leads-server';
import { CampaignStore } from './store/campaign-store';
import { ContactStore } from './store/contact-store';
import { DoNotCallStore } from './store/do-not-call-store';
import { EventRouteStore } from './store/event-route-store';
import { FollowupStore } from './store/followup-store';
import { MessageStore } from './store/message-store';
import { ScheduleStore } from './store/schedule-store';
import { TemplateStore } from './store/template-store';
import { AcceptWriter } from './usecases/accept-writer';
import { Campaigns } from './usecases/campaigns';
import { ComplianceChecks } from './usecases/compliance';
import { Contacts } from './usecases/contacts';
import { Dialing } from './usecases/dialing';
import { DoNotCall } from './usecases/do-not-call';
import { EventRoutes } from './usecases/event-routes';
import { CreditView } from './usecases/credit-check';
import { LeadIngest } from './usecases/leads';
import { ContactLifecycle } from './usecases/lifecycle';
import { MessageFollowups, Messaging, RecordingMessageAdapter } from './usecases/messaging';
import { leadEvents } from './events/publish';
import { Templates } from './usecases/templates';

const SCHEDULER_BATCH = 200;
/** The scheduler's look for other replicas' items while one contends (no change stream, decision 0141). */
const SCHEDULER_LOOK_MS = 1_000;

/** Starts the leads service; returns its lifecycle so tests can stop it in-process. */
export async function startLeads(env: Record<string, string | undefined> = process.env) {
  const cfg = readConfig(env);
  // Contacts carry personal data: phones, names, addresses and rendered messages stay out of logs.
  const svc = await openService('leads', cfg, {
    redact: ['phone', '*.phone', 'email', '*.email', '*.name', 'body', '*.body', 'to', '*.to'],
  });
  const { log, lifecycle, conn } = svc;
  const now = () => new Date();

  const campaigns = new CampaignStore(conn);
  const contacts = new ContactStore(conn);
  const dnc = new DoNotCallStore(conn);
  const routes = new EventRouteStore(conn);
  const templates = new TemplateStore(conn);
  const messages = new MessageStore(conn);
  const schedule = new ScheduleStore(conn);
  const followups = new FollowupStore(conn);

  // Also creates the call and billing streams it reads, so it can start before telephony or billing.
  const { LeadsDialEvent, LeadsContactEvent, LeadsMessageEvent, TelephonyCallEvent, BillingCreditEvent } =
    voiceapi.events.v1;
  // The scheduler and the outbox relay run on one lease, so an idle replica renews one lease.
  const lease = new Lease(conn, 'leads-scheduler', cfg.INSTANCE_ID);
  const { kafka, publisher, outbox } = await startEvents({
    service: 'leads',
    settings: cfg,
    streams: [LeadsDialEvent, LeadsContactEvent, LeadsMessageEvent, TelephonyCallEvent, BillingCreditEvent],
    log,
    lifecycle,
    outboxOn: conn,
    outboxLease: lease,
  });

  const billing = createPromiseClient(voiceapi.billing.v1.BillingServiceService, cfg.BILLING_GRPC_ADDR, {
    timeoutMs: cfg.GRPC_DEADLINE_MS,
    contract: voiceapi.billing.v1.BillingServiceDefinition,
  });
  lifecycle.onStop('billing client', () => billing.close());
  const credits = new CreditView(billingHoldQuote(billing));
  // Any replica may take a tenant's next lead, so each hears every wallet's credit in its own broadcast group.
  const creditNews = followCredit(
    new EventSubscriber(kafka, {
      group: broadcastGroup('leads', 'credit-view', cfg.INSTANCE_ID),
      log,
      publisher,
      fromBeginning: false,
      removeGroupOnStop: true,
      concurrency: 256,
      keyOrder: false,
    }),
    credits,
  );
  creditNews.start();
  lifecycle.onStop('credit view consumer', () => creditNews.stop());
  // Groups of replicas that died without removing their own.
  void removeIdleBroadcastGroups(kafka, broadcastGroupPrefix('leads', 'credit-view'), log).catch((err: unknown) =>
    log.warn({ err }, 'could not look for idle broadcast groups'),
  );

  const checks = new ComplianceChecks(dnc);
  const webhooks = createPromiseClient(voiceapi.webhooks.v1.WebhooksServiceService, cfg.WEBHOOKS_GRPC_ADDR, {
    timeoutMs: cfg.GRPC_DEADLINE_MS,
    contract: voiceapi.webhooks.v1.WebhooksServiceDefinition,
  });
  lifecycle.onStop('webhooks client', () => webhooks.close());
  const announced = leadEvents(outbox);
  const lifecycleOfContacts = new ContactLifecycle(
    contacts,
    announced,
    webhookReaders(webhooks, cfg.WEBHOOK_TYPES_CACHE_MS),
    now,
  );
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
  const useCases = {
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

  // No inbox: both consumers are idempotent by the state they change, and an inbox would cost two writes
  // per dial request on the stream they share.
  const outcomes = followCallOutcomes(
    new EventSubscriber(kafka, { group: consumerGroup('leads', 'call-outcomes'), log, publisher }),
    dialing,
  );
  outcomes.start();
  lifecycle.onStop('call-outcome consumer', () => outcomes.stop());
  const sender = sendRequestedMessages(
    new EventSubscriber(kafka, { group: consumerGroup('leads', 'message-sender'), log, publisher, concurrency: 16 }),
    messaging,
  );
  sender.start();
  lifecycle.onStop('message sender', () => sender.stop());

  // On one replica at a time, woken by its own schedules and the next due item; other replicas' items are
  // found by its look (no change stream, decision 0141). A full batch is followed by another at once.
  const scheduler: Worker = new Worker({
    service: 'leads',
    job: 'scheduler',
    everyMs: cfg.SCHEDULER_INTERVAL_MS,
    lookMs: SCHEDULER_LOOK_MS,
    gatherMs: 50,
    lease,
    log,
    pass: async () => {
      const { handled, nextDueAt } = await dialing.dispatchDue(SCHEDULER_BATCH);
      if (nextDueAt) scheduler.wakeIn(nextDueAt.getTime() - Date.now());
      return handled === SCHEDULER_BATCH ? 'more' : 'done';
    },
  });
  schedule.onScheduled((dueAt) => scheduler.wakeIn(dueAt.getTime() - Date.now()));
  scheduler.start();
  lifecycle.onStop('scheduler', () => scheduler.stop());
  const requestAgain = reannounceOnTake(lease, dialing, log);
  lifecycle.onStop('dial requests again', requestAgain.stop);

  const server = await serveGrpc(svc, [leadsService(useCases, log)]);
  log.info({ port: server.port, callingWindowDefault: cfg.CALLING_WINDOW_DEFAULT }, 'leads listening');
  return { port: server.port, lifecycle, log, scheduler, dialing, outbox };
}

runAsMain(module, 'leads', () => startLeads());

/** How far back the next relay holder re-requests dials (decision 0149). */
const REANNOUNCE_WINDOW_MS = 10 * 60_000;
/** Lets a write the previous holder began land or fail first. */
const REANNOUNCE_AFTER_MS = 10_000;

/** A relay holder may die between a contact's write and its dial request (decision 0149); the next re-requests. */
function reannounceOnTake(lease: Lease, dialing: Dialing, log: Logger): { stop: () => void } {
  let timer: NodeJS.Timeout | undefined;
  const taken = () => {
    const since = new Date(Date.now() - REANNOUNCE_WINDOW_MS);
    clearTimeout(timer);
    timer = setTimeout(() => {
      if (!lease.held) return;
      // A takeover often comes with store trouble: retried for a while.
      retryTransient(() => dialing.reannounceQueued(since), {
        deadline: Date.now() + REANNOUNCE_WINDOW_MS,
        onRetry: (err) => log.warn({ err }, 'requesting again the dials of queued contacts failed; trying again'),
      }).then(
        (n) =>
          n > 0 && log.info({ requested: n }, 'dials of queued contacts requested again after the lease was taken'),
        (err: unknown) => log.error({ err }, 'dials of queued contacts could not be requested again'),
      );
    }, REANNOUNCE_AFTER_MS).unref();
  };
  lease.onTaken(taken);
  if (lease.held) taken();
  return { stop: () => clearTimeout(timer) };
}
