import { metrics } from '@opentelemetry/api';
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';
import type { Logger } from '@voiceapi/kit/service';
import { webhookMessage } from '../domain/messages';
import { newSecret } from '../domain/signing';
import type { DeliveryDoc } from '../store/delivery-store';
import type { EndpointDoc } from '../store/endpoint-store';
import { DeliveryAttempts, type DeliveryAttemptsDeps } from './delivery-attempts';

// The rules of one attempt, with the endpoint store and the sender faked: what the delivery
// becomes, what the endpoint becomes, and when the next attempt is due.
const now = new Date('2026-11-25T12:00:00Z');
const secret = newSecret();

function setup(opts: {
  answer?: { statusCode: number; retryAfter?: string } | { error: string; ours?: boolean };
  endpoint?: Partial<EndpointDoc>;
  /** The endpoint store fails while `away` is set. */
  store?: { away: boolean };
  /** The real clock instead of the fixed `now`. */
  realClock?: boolean;
  delivery?: Partial<DeliveryDoc>;
  body?: string;
}) {
  const delivery: DeliveryDoc = {
    _id: 'd-1',
    tenantId: 't-1',
    endpointId: 'e-1',
    messageId: 'msg_1',
    type: 'call.outbound.billed',
    status: 'pending',
    attempts: 0,
    step: 0,
    body: opts.body ?? '{"type":"call.outbound.billed"}',
    createdAt: now,
    updatedAt: now,
    ...opts.delivery,
  };
  const endpoint: EndpointDoc = {
    _id: 'e-1',
    tenantId: 't-1',
    url: 'https://hooks.example.com/in',
    events: [],
    status: 'enabled',
    secrets: [],
    createdAt: now,
    updatedAt: now,
    ...opts.endpoint,
  };
  const endpointUpdates: Record<string, unknown>[] = [];
  const sent: { url: string; headers: Record<string, string>; body: string }[] = [];
  const deps = {
    legacyBody: async () => '{"type":"legacy"}',
    endpoints: {
      get: async () => {
        if (opts.store?.away) throw new Error('store away');
        return endpoint;
      },
      update: async (_id: string, set: Record<string, unknown>) => void endpointUpdates.push(set),
    },
    signingSecrets: () => [secret],
    sender: {
      post: async (url: string, headers: Record<string, string>, body: string) => (
        sent.push({ url, headers, body }),
        opts.answer ?? { statusCode: 204 }
      ),
    },
    log: { warn: jest.fn(), info: jest.fn(), error: jest.fn(), debug: jest.fn() } as unknown as Logger,
    now: () => (opts.realClock ? new Date() : now),
    schedule: [0, 5_000, 300_000],
    timeoutMs: 15_000,
    disableAfterMs: 5 * 24 * 3600_000,
  } as unknown as DeliveryAttemptsDeps;
  const attempts = new DeliveryAttempts(deps);
  return { attempt: () => attempts.attempt(delivery), endpointUpdates, sent };
}

describe('DeliveryAttempts', () => {
  it('sends a pending delivery signed, and records its success', async () => {
    const { attempt, sent } = setup({});
    const result = await attempt();
    expect(sent).toHaveLength(1);
    expect(sent[0]!.headers).toMatchObject({ 'webhook-id': 'msg_1', 'content-type': 'application/json' });
    expect(sent[0]!.headers['webhook-signature']).toMatch(/^v1,/);
    expect(result.kind).toBe('ended');
    expect(result.kind !== 'waiting' && result.change.set).toMatchObject({
      status: 'succeeded',
      attempts: 1,
      step: 1,
      lastStatusCode: 204,
      attemptLog: [{ at: now, statusCode: 204, durationMs: expect.any(Number) }],
    });
    expect(result.kind !== 'waiting' && result.change.unset).toEqual(['nextAttemptAt', 'lastError']);
  });

  it('asks for the next attempt on the schedule after a failure, and starts the endpoint’s failing clock', async () => {
    const { attempt, endpointUpdates } = setup({ answer: { statusCode: 500 } });
    const result = await attempt();
    expect(result).toMatchObject({ kind: 'again', nextAttemptAt: new Date(now.getTime() + 5_000) });
    expect(result.kind === 'again' && result.change.set).toMatchObject({
      attempts: 1,
      step: 1,
      lastStatusCode: 500,
      nextAttemptAt: new Date(now.getTime() + 5_000),
    });
    expect(endpointUpdates).toEqual([{ failingSince: now }]);
  });

  it('honours Retry-After up to the longest delay of the schedule', async () => {
    const { attempt } = setup({ answer: { statusCode: 429, retryAfter: '60' } });
    expect(await attempt()).toMatchObject({ kind: 'again', nextAttemptAt: new Date(now.getTime() + 60_000) });
  });

  it('fails the delivery once the schedule is spent', async () => {
    const earlier = Array.from({ length: 20 }, (_, i) => ({ at: new Date(i), error: 'timeout', durationMs: 1 }));
    const { attempt } = setup({
      answer: { error: 'timeout' },
      delivery: { attempts: 20, step: 3, attemptLog: earlier },
    });
    const result = await attempt();
    expect(result.kind).toBe('ended');
    const set = result.kind === 'ended' ? result.change.set : {};
    expect(set).toMatchObject({ status: 'failed', lastError: 'timeout', attempts: 21 });
    // The log keeps the latest 20 attempts.
    expect(set.attemptLog).toHaveLength(20);
    expect(set.attemptLog![0]!.at).toEqual(new Date(1));
    expect(set.attemptLog![19]!.at).toEqual(now);
  });

  it('disables an endpoint that answers 410 Gone, or that failed for longer than the limit', async () => {
    const gone = setup({ answer: { statusCode: 410 } });
    expect(await gone.attempt()).toMatchObject({ kind: 'ended', change: { set: { status: 'failed' } } });
    expect(gone.endpointUpdates[0]).toMatchObject({ status: 'disabled', disabledReason: 'gone' });
    const failing = setup({
      answer: { statusCode: 502 },
      endpoint: { failingSince: new Date(now.getTime() - 6 * 24 * 3600_000) },
    });
    expect(await failing.attempt()).toMatchObject({
      kind: 'ended',
      change: { set: { status: 'failed', lastStatusCode: 502 } },
    });
    expect(failing.endpointUpdates[0]).toMatchObject({ status: 'disabled', disabledReason: 'failing' });
  });

  it('sends nothing to a paused endpoint (looked at again later), and fails a delivery to a deleted one', async () => {
    const paused = setup({ endpoint: { status: 'paused' } });
    expect(await paused.attempt()).toEqual({ kind: 'waiting', nextAttemptAt: new Date(now.getTime() + 10 * 60_000) });
    expect(paused.sent).toEqual([]);
    const deleted = setup({ endpoint: { status: 'deleted' } });
    expect(await deleted.attempt()).toMatchObject({
      kind: 'ended',
      change: { set: { status: 'failed', lastError: 'endpoint_deleted' } },
    });
    expect(deleted.sent).toEqual([]);
  });

  it('sends nothing before the delivery is due', async () => {
    const early = setup({ delivery: { nextAttemptAt: new Date(now.getTime() + 30_000) } });
    expect(await early.attempt()).toEqual({ kind: 'waiting', nextAttemptAt: new Date(now.getTime() + 30_000) });
    expect(early.sent).toEqual([]);
  });

  it('sends a delivery stored before 1.3 with its body from `messages`, and keeps the body in it from then on', async () => {
    const legacy = setup({ delivery: { body: undefined } });
    const result = await legacy.attempt();
    expect(legacy.sent[0]!.body).toBe('{"type":"legacy"}');
    expect(result.kind !== 'waiting' && result.change.set.body).toBe('{"type":"legacy"}');
  });
});

describe('DeliveryAttempts metrics', () => {
  const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 });
  beforeAll(() => metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] })));
  afterAll(() => metrics.disable());
  const exported = async (name: string) => {
    await reader.forceFlush();
    const got = exporter
      .getMetrics()
      .at(-1)
      ?.scopeMetrics.flatMap((s) => s.metrics)
      .find((m) => m.descriptor.name === name);
    return (got?.dataPoints ?? []).map((p) => ({ attributes: p.attributes, value: p.value }));
  };
  // Billed 42.5 s before the endpoint answered.
  const billed = webhookMessage('billed:call-1', 't-1', 'call.outbound.billed', new Date(now.getTime() - 42_500), {
    callId: 'call-1',
  });

  it('counts attempts by outcome and whose failure it was, first attempts sent in time, and the delay to a 2xx, by event type', async () => {
    // Delivered; the tenant's endpoint answering 500, refusing, not answering in time; our side unable to send.
    await setup({ body: billed.body }).attempt();
    await setup({ body: billed.body, endpoint: { failingSince: new Date(now.getTime() - 60_000) } }).attempt();
    await setup({ body: billed.body, answer: { statusCode: 500 } }).attempt();
    await setup({ body: billed.body, answer: { error: 'unreachable' } }).attempt();
    await setup({ body: billed.body, answer: { error: 'timeout' } }).attempt();
    await setup({ body: billed.body, answer: { error: 'unreachable', ours: true } }).attempt();
    // A retry: no first-attempt delay again.
    await setup({ body: billed.body, delivery: { attempts: 1, step: 1 } }).attempt();
    expect(await exported('voiceapi.webhooks.delivery.attempts')).toEqual([
      // Both series of the SLO exist from the start (0 before any attempt).
      { attributes: { outcome: 'delivered', fault: 'none' }, value: 3 },
      { attributes: { outcome: 'failed', fault: 'platform' }, value: 1 },
      { attributes: { outcome: 'failed', fault: 'endpoint' }, value: 3 },
    ]);
    // Six first attempts sent 42.5 s after the event, in time; the retry is no first attempt.
    expect(await exported('voiceapi.webhooks.delivery.first_attempts')).toEqual([
      { attributes: { event_type: 'call.outbound.billed', late: 'false' }, value: 6 },
      { attributes: { event_type: 'call.outbound.billed', late: 'true' }, value: 0 },
    ]);
    const delay = await exported('voiceapi.webhooks.delivery.delay');
    expect(delay.map((d) => d.attributes)).toEqual([{ event_type: 'call.outbound.billed' }]);
    expect(delay[0]!.value).toMatchObject({ count: 3, sum: 3 * 42.5 });
  });

  it('counts a first attempt that cannot be made late once its event is a minute old, while it keeps failing', async () => {
    // Billed 59 s ago (real time: the count's own clock), and the endpoint store away.
    const old = webhookMessage('billed:call-2', 't-1', 'call.outbound.billed', new Date(Date.now() - 59_000), {
      callId: 'call-2',
    });
    const store = { away: true };
    const attempts = setup({ body: old.body, delivery: { _id: 'd-2' }, store, realClock: true });
    await expect(attempts.attempt()).rejects.toThrow('store away');
    const late = async () =>
      (await exported('voiceapi.webhooks.delivery.first_attempts')).find((p) => p.attributes.late === 'true')?.value;
    const before = await late();
    await new Promise((r) => setTimeout(r, 2_500)); // past the minute, and a sweep of the count
    expect(await late()).toBe(Number(before) + 1);
    // Tried again once the store is back, and sent: not counted a second time.
    store.away = false;
    expect((await attempts.attempt()).kind).toBe('ended');
    expect(attempts.sent).toHaveLength(1);
    expect(await late()).toBe(Number(before) + 1);
  });
});
