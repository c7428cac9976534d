import {
  ChangeFeed,
  consumerGroup,
  createPromiseClient,
  EventSubscriber,
  Lease,
  openService,
  openObjectStore,
  runAsMain,
  serveGrpc,
  serviceMetrics,
  startEvents,
  Worker,
} from '@voiceapi/kit';
import { voiceapi } from '@voiceapi/proto';
import { SimulatorCarrier } from './carrier/simulator';
import { answeringAgents } from './clients/agents';
import { billingWallet } from './clients/billing';
import { leadsDialClaims } from './clients/leads';
import { readConfig } from './config';
import { RecordingTokens } from './domain/recording-token';
import { followCallFeed, followLeads } from './events/consume';
import { callEvents } from './events/publish';
import { telephonyService } from './grpc/telephony-server';
import { CallFeedStore } from './store/call-feed-store';
import { FeedFollowerStore } from './store/feed-follower-store';
import { CallStore } from './store/call-store';
import { DialQueueStore } from './store/dial-queue-store';
import { HeldDials } from './usecases/held-dials';
import { takeOverQueued } from './workers/queue-takeover';
import { LineStore } from './store/line-store';
import { NumberStore } from './store/number-store';
import { RecordingStore } from './store/recording-store';
import { RollupStore } from './store/rollup-store';
import { TenantSettingsStore } from './store/tenant-settings-store';
import { Analytics } from './usecases/analytics';
import { CallFeed, FeedFollowers, FeedWaiters } from './usecases/call-feed';
import { CallRunner } from './usecases/call-runner';
import { Calls } from './usecases/calls';
import { Concurrency } from './usecases/concurrency';
import { Dialer } from './usecases/dialer';
import { Inbound } from './usecases/inbound';
import { Numbers } from './usecases/numbers';
import { RecordingKeeper } from './usecases/recording-keeper';
import { Recovery } from './workers/recovery';
import { backgroundWorkers } from './workers/background';
import { RollupRecompute } from './workers/rollups';

/** Starts the telephony service; returns its lifecycle so tests can stop it in-process. */
export async function startTelephony(env: Record<string, string | undefined> = process.env) {
  const cfg = readConfig(env);
  // Phone numbers are personal data; the recording secret never leaves this process.
  const svc = await openService('telephony', cfg, {
    redact: ['phone', '*.phone', 'fromNumber', '*.fromNumber', 'toNumber', '*.toNumber', 'token', '*.token'],
  });
  const { log, lifecycle, conn } = svc;
  const now = () => new Date();

  const calls = new CallStore(conn);
  const recordings = new RecordingStore(conn, await openObjectStore(cfg, lifecycle));
  const numbers = new NumberStore(conn, { cacheTtlMs: cfg.NUMBER_CACHE_TTL_MS, log });
  numbers.cache.start();
  lifecycle.onStop('number cache', () => numbers.cache.stop());
  const lines = new LineStore(conn);
  // Dials held until placed (decision 0147); `leftovers`: the queue older releases write, taken over below.
  const held = new HeldDials(() => takingOver.wake());
  const leftovers = new DialQueueStore(conn);
  const settings = new TenantSettingsStore(conn, cfg.DEFAULT_MAX_CONCURRENT_CALLS, log);
  settings.cache.start();
  lifecycle.onStop('package cache', () => settings.cache.stop());
  const rollups = new RollupStore(conn);
  const feedStore = new CallFeedStore(conn);
  // Feed readers wait for their tenant's next change, written by whichever replica owns the tenant's partition.
  const waiters = new FeedWaiters();
  const followers = new FeedFollowers({ store: new FeedFollowerStore(conn), now });
  const feed = new CallFeed({ store: feedStore, followers, waiters, now, log });
  const feedChanges = new ChangeFeed([feedStore.changes((tenantId) => waiters.wake(tenantId))], () => undefined, log);
  feedChanges.start();
  lifecycle.onStop('call feed changes', () => feedChanges.stop());

  // Telephony owns the call streams, and creates leads' dial stream too (idempotent) so it can start before leads.
  const { TelephonyCallEvent, TelephonyCallFeedEvent, LeadsDialEvent } = voiceapi.events.v1;
  // The background workers and the outbox run on one replica at a time under one shared lease (an idle replica
  // renews one lease); every replica dispatches the dials it holds.
  const lease = new Lease(conn, 'telephony-dispatcher', cfg.INSTANCE_ID);
  const { kafka, publisher, outbox } = await startEvents({
    service: 'telephony',
    settings: cfg,
    streams: [TelephonyCallEvent, TelephonyCallFeedEvent, LeadsDialEvent],
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
  const leads = createPromiseClient(voiceapi.leads.v1.LeadsServiceService, cfg.LEADS_GRPC_ADDR, {
    timeoutMs: cfg.GRPC_DEADLINE_MS,
    contract: voiceapi.leads.v1.LeadsServiceDefinition,
  });
  lifecycle.onStop('leads client', () => leads.close());
  const agentsClient = createPromiseClient(voiceapi.agents.v1.AgentsServiceService, cfg.AGENTS_GRPC_ADDR, {
    timeoutMs: cfg.GRPC_DEADLINE_MS,
    contract: voiceapi.agents.v1.AgentsServiceDefinition,
  });
  lifecycle.onStop('agents client', () => agentsClient.close());

  const wallet = billingWallet(billing);
  const claims = leadsDialClaims(leads);
  const agents = answeringAgents(agentsClient);

  const carrier = new SimulatorCarrier(cfg.CARRIER_SIMULATOR_SPEEDUP);
  const metrics = serviceMetrics('telephony');
  const events = callEvents(outbox, followers);
  const keeper = new RecordingKeeper({
    calls,
    recordings,
    carrier,
    log,
    now,
    ...(cfg.RECORDING_RETENTION_DAYS !== undefined && { retentionDays: cfg.RECORDING_RETENTION_DAYS }),
  });
  const runner = new CallRunner({
    calls,
    recordings: keeper,
    lines,
    rollups,
    carrier,
    wallet,
    agents,
    events,
    log,
    now,
    metrics: {
      ended: metrics.counter('calls.ended', {
        description: 'Calls ended, each counted once where its end is written, by direction',
        unit: '{call}',
      }),
      charged: metrics.counter('calls.charged', {
        description: 'Ended calls charged, each once: late "true" when not within 60 s of its end (call-charge SLO)',
        unit: '{call}',
      }),
    },
  });
  const dialer = new Dialer({
    queue: held,
    spill: {
      keep: (dials) => leftovers.keep(dials),
      kept: () => takingOver.wake(),
      has: (scope, dialId) => leftovers.has(scope, dialId),
      removeContact: (scope, contactId) => leftovers.removeContact(scope, contactId),
    },
    calls,
    lines,
    settings,
    claims,
    runner,
    log,
    now,
    platformNumber: cfg.PLATFORM_FROM_NUMBER,
    wake: () => dispatching.wake(),
    wakeIn: (ms) => dispatching.wakeIn(ms),
    metrics: {
      dials: metrics.counter('dials', {
        description: 'Dial requests by result: dialled, insufficient_credits, or the refusal of the claim',
      }),
      dialDelay: metrics.histogram('lead.dial_delay', {
        description:
          "From the moment a lead could first be dialled (accepted, or its scheduled time come) to its first attempt decided: ringing, or ended for the tenant's reasons (contact moved on, no credit)",
        unit: 's',
        buckets: [1, 5, 10, 30, 60, 120, 300, 900, 3600],
      }),
      firstDials: metrics.counter('lead.first_dials', {
        description:
          'Leads\' first attempts, each counted once: late "false" decided within 60 s of the lead becoming dialable (or after waiting for the tenant\'s own busy lines), late "true" counted the moment 60 s pass undecided (the lead-to-dial SLO)',
        unit: '{lead}',
      }),
      firstDialTriesFailed: metrics.counter('lead.first_dial_tries_failed', {
        description:
          "Tries to place a lead's first attempt that failed on the platform's side (leads or billing unreachable); each is tried again",
        unit: '{try}',
      }),
    },
  });
  // Woken by a new dial, a line freed while dials wait (any replica), or a package set; the timer is a safety net.
  const dispatching = new Worker({
    service: 'telephony',
    job: 'dial-dispatch',
    everyMs: cfg.DISPATCH_INTERVAL_MS,
    wakeOn: [{ ...lines.changes(), wakes: () => dialer.waitingForLines }],
    gatherMs: 50,
    log,
    pass: async () => void (await dialer.dispatch()),
    drain: () => dialer.drain(),
  });
  settings.onChange(() => dispatching.wake());
  // Holds dials spilled to the dial queue by any replica (or queued by releases before 0147) until placed.
  const takingOver = new Worker({
    service: 'telephony',
    job: 'dial-queue-takeover',
    everyMs: cfg.RECOVERY_INTERVAL_MS,
    // Woken as dials held from the queue are placed: one look a second at most while a backlog drains.
    gatherMs: 1_000,
    lease,
    log,
    pass: async () => void (await takeOverQueued(leftovers, held, () => dispatching.wake())),
  });
  const recovery = new Recovery({
    lines,
    calls,
    waiting: async (scope, dialId) => held.has(scope, dialId) || (await leftovers.has(scope, dialId)),
    runner,
    carrier,
    log,
    now,
    isDispatching: (id) => dialer.isDispatching(id),
  });
  const recompute = new RollupRecompute({ rollups, calls });
  const workers = [
    dispatching,
    takingOver,
    ...backgroundWorkers({ cfg, lease, log, recovery, runner, keeper, recompute, rollups, feed }),
  ];
  for (const w of workers) {
    w.start();
    lifecycle.onStop(w.spec.job, () => w.stop());
  }

  const useCases = {
    calls: new Calls({
      calls,
      feed: feedStore,
      lines,
      recordings,
      tokens: new RecordingTokens(cfg.RECORDING_URL_SECRET),
      tokenTtlMs: cfg.RECORDING_URL_TTL_SECONDS * 1000,
      now,
    }),
    analytics: new Analytics(rollups),
    numbers: new Numbers({ numbers, wallet, now }),
    inbound: new Inbound({
      numbers,
      calls,
      lines,
      settings,
      runner,
      agents,
      maxCallSeconds: cfg.INBOUND_MAX_CALL_SECONDS,
      log,
      now,
    }),
    concurrency: new Concurrency(settings, now),
    feed,
    now,
  };
  const server = await serveGrpc(svc, [telephonyService(useCases, log)]);
  // Feed readers answer at once on stop (before the server drains), so gateway streams move on to another replica.
  lifecycle.onStop('call feed readers', () => waiters.stop());
  // Consumers start after the server listens: joining a group whose last member was killed waits out its session.
  // No inbox: queueing is idempotent by dial id, erasure by contact, the feed by change id.
  const dialRequests = followLeads(
    new EventSubscriber(kafka, {
      group: consumerGroup('telephony', 'dial-requests'),
      log,
      publisher,
      concurrency: 16,
      // A dial's request stays uncommitted until the dial is placed or dropped (decision 0147).
      holdCommits: { revoked: (topic, partitions) => void held.revoke(topic, partitions) },
    }),
    dialer,
    useCases.calls,
  );
  // Keyed by tenant, in order per key: one tenant's changes are written one after the other.
  const feedWriter = followCallFeed(
    new EventSubscriber(kafka, { group: consumerGroup('telephony', 'call-feed'), log, publisher, concurrency: 16 }),
    feed,
  );
  // Left together: each leaves its group on its own, and one after the other they could outlast the pod's grace period.
  lifecycle.onStop('consumers', async () => {
    // No dial starts once the group is left: what is still held goes to the partitions' next owner.
    await dispatching.stop();
    await Promise.all([dialRequests.stop(), feedWriter.stop()]);
  });
  dialRequests.start();
  feedWriter.start();

  log.info({ port: server.port, carrier: carrier.name, speedup: cfg.CARRIER_SIMULATOR_SPEEDUP }, 'telephony listening');
  return { port: server.port, lifecycle, log, dialer, recovery, outbox, runner };
}

runAsMain(module, 'telephony', () => startTelephony());
