import type { Outbox } from '@voiceapi/kit/events';
import { serviceMetrics } from '@voiceapi/kit/metrics';
import type { OpenedService } from '@voiceapi/kit/service';
import { SimulatorCarrier } from '../carrier/simulator';
import type { Config } from '../config';
import { RecordingTokens } from '../domain/recording-token';
import { callEvents } from '../events/publish';
import type { TelephonyUseCases } from '../grpc/telephony-server';
import { Analytics } from '../usecases/analytics';
import { CallFeed, FeedFollowers } from '../usecases/call-feed';
import { CallRunner } from '../usecases/call-runner';
import { Calls } from '../usecases/calls';
import { Concurrency } from '../usecases/concurrency';
import { Dialer } from '../usecases/dialer';
import { HeldDials } from '../usecases/held-dials';
import { Inbound } from '../usecases/inbound';
import { Numbers } from '../usecases/numbers';
import { RecordingKeeper } from '../usecases/recording-keeper';
import type { Clients } from './clients';
import type { Stores } from './stores';
import type { DialWakes } from './workers';

export type UseCases = ReturnType<typeof buildUseCases>;

type Metrics = ReturnType<typeof serviceMetrics>;

/**
 * The calls and dials, and (`api`) what the gRPC adapter serves. The dialer and the held dials wake the dial workers,
 * made after them, through `wakes`.
 */
export function buildUseCases(
  svc: OpenedService<Config>,
  stores: Stores,
  clients: Clients,
  outbox: Outbox,
  wakes: DialWakes,
) {
  const { cfg, log } = svc;
  const { calls, recordings, lines, leftovers, settings, rollups, feedStore, followerStore, waiters } = stores;
  const { wallet, claims, agents } = clients;
  const now = () => new Date();
  // Dials held until placed (decision 0147); what spills over goes to the dial queue, taken over by a worker.
  const held = new HeldDials(() => wakes.takeOver());
  const followers = new FeedFollowers({ store: followerStore, now });
  const feed = new CallFeed({ store: feedStore, followers, waiters, now, log });
  const carrier = new SimulatorCarrier(cfg.CARRIER_SIMULATOR_SPEEDUP);
  const metrics = serviceMetrics('telephony');
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
    events: callEvents(outbox, followers),
    log,
    now,
    metrics: runnerMetrics(metrics),
  });
  const dialer = new Dialer({
    queue: held,
    spill: {
      keep: (dials) => leftovers.keep(dials),
      kept: () => wakes.takeOver(),
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
    wake: () => wakes.dispatch(),
    wakeIn: (ms) => wakes.dispatchIn(ms),
    metrics: dialerMetrics(metrics),
  });
  const api = servedUseCases(svc, stores, clients, { runner, feed, now });
  return { held, feed, carrier, keeper, runner, dialer, api };
}

/** What the gRPC adapter serves. */
function servedUseCases(
  { cfg, log }: OpenedService<Config>,
  { calls, recordings, numbers, lines, settings, rollups, feedStore }: Stores,
  { wallet, agents }: Clients,
  { runner, feed, now }: { runner: CallRunner; feed: CallFeed; now: () => Date },
): TelephonyUseCases {
  return {
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
}

function runnerMetrics(metrics: Metrics) {
  return {
    ended: metrics.counter('calls.ended', {
      description: 'Calls ended, each counted once where its end is written, by direction',
      unit: '{call}',
    }),
    charged: metrics.counter('calls.charged', {
      description: 'Ended calls charged, each once: late "true" when not within 60 s of its end (call-charge SLO)',
      unit: '{call}',
    }),
  };
}

function dialerMetrics(metrics: Metrics) {
  return {
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
  };
}
