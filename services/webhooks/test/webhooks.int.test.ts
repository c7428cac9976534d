// Over 300 lines because one service's integration cases share its started store, Kafka and service per file.
import { randomBytes, randomUUID } from 'node:crypto';
import mongoose from 'mongoose';
import { DomainError } from '@voiceapi/kit/errors';
import { createKafka, eventRecord, EventPublisher } from '@voiceapi/kit/events';
import { createPromiseClient, type CallContext } from '@voiceapi/kit/grpc';
import { createLogger } from '@voiceapi/kit/service';
import { voiceapi } from '@voiceapi/proto';
import { startWebhooks } from '../src/main';
import { eventually } from '../../../test/harness/wait';
import { Receiver, type Answer } from './receiver';

const { BillingCallEvent, LeadsContactEvent, CallDirection } = voiceapi.events.v1;

// The webhooks service in-process against the harness's real MongoDB-compatible server and
// Kafka; platform events are published to the real topics, and a real local HTTP server receives
// the deliveries and verifies them with the Standard Webhooks library, as a tenant would.
describe('webhooks service (gRPC + MongoDB + Kafka + a real receiver)', () => {
  const db = `webhooks_it_${randomBytes(4).toString('hex')}`;
  const log = createLogger('webhooks-test', 'silent');
  const receiver = new Receiver();
  let svc: Awaited<ReturnType<typeof startWebhooks>>;
  let client: ReturnType<typeof createPromiseClient<typeof voiceapi.webhooks.v1.WebhooksServiceService>>;
  let publisher: EventPublisher;
  let conn: mongoose.Connection;
  jest.setTimeout(120_000);

  const tenant = (): CallContext => ({ tenantId: `t-${randomUUID()}`, keyMode: 'live' });
  const rejection = async (p: Promise<unknown>): Promise<DomainError> => {
    const err = await p.then(
      () => undefined,
      (e: unknown) => e,
    );
    if (!(err instanceof DomainError)) throw new Error(`expected a DomainError, got ${String(err)}`);
    return err;
  };
  /** Registers an endpoint at a fresh path of the receiver; the receiver learns its secret. */
  const endpoint = async (ctx: CallContext, events: string[] = [], path = `/${randomUUID()}`) => {
    const res = await client.registerEndpoint({ url: `${receiver.base}${path}`, events }, ctx);
    receiver.secrets.set(path, [res.secret]);
    return { id: res.endpoint!.id, path, secret: res.secret };
  };
  const billed = (ctx: CallContext, callId = randomUUID(), sandbox = false) =>
    eventRecord(
      BillingCallEvent,
      ctx.tenantId!,
      BillingCallEvent.fromPartial({
        occurTime: new Date(),
        event: {
          $case: 'callBilled',
          callBilled: {
            callId,
            tenantId: ctx.tenantId!,
            direction: CallDirection.CALL_DIRECTION_OUTBOUND,
            billingStatus: 'charged',
            creditsCharged: 4,
            balanceAfter: 96,
            transactionId: `tx-${callId}`,
            sandbox,
            endTime: new Date(),
            durationSeconds: 61,
          },
        },
      }),
      `billed:${callId}`,
    );
  const statusChanged = (ctx: CallContext) =>
    eventRecord(
      LeadsContactEvent,
      randomUUID(),
      LeadsContactEvent.fromPartial({
        occurTime: new Date(),
        event: {
          $case: 'contactStatusChanged',
          contactStatusChanged: {
            tenantId: ctx.tenantId!,
            contactId: randomUUID(),
            campaignId: 'p1',
            status: 'completed',
            previousStatus: 'in_progress',
            sandbox: true,
          },
        },
      }),
    );
  const deliveries = async (id: string) =>
    (await client.listDeliveries({ endpointId: id, limit: 1000 }, {})).deliveries;

  beforeAll(async () => {
    await receiver.start();
    svc = await startWebhooks({
      MONGO_URL: process.env.MONGO_URL,
      KAFKA_BROKERS: process.env.KAFKA_BROKERS,
      MONGO_DB: db,
      GRPC_PORT: '0',
      LOG_LEVEL: process.env.WEBHOOKS_IT_LOG ?? 'silent',
      INSTANCE_ID: `webhooks-it-${randomUUID()}`,
      WEBHOOK_SECRETS_KEY: randomBytes(32).toString('base64url'),
      OUTBOUND_ALLOWLIST: receiver.hostPort,
      WEBHOOK_RETRY_SCHEDULE: '0,200ms,400ms,600ms,1500ms',
      WEBHOOK_TIMEOUT_MS: '1000',
      WEBHOOK_SWEEP_INTERVAL_MS: '200',
      WEBHOOK_DISABLE_AFTER: '1h',
      WEBHOOK_ROTATION_OVERLAP: '1h',
    });
    client = createPromiseClient(voiceapi.webhooks.v1.WebhooksServiceService, `127.0.0.1:${svc.port}`, {
      timeoutMs: 20_000,
    });
    publisher = new EventPublisher(
      createKafka({ brokers: process.env.KAFKA_BROKERS!.split(','), clientId: 'webhooks-it', log }),
    );
    await publisher.connect();
    conn = await mongoose.createConnection(process.env.MONGO_URL!, { dbName: db }).asPromise();
  });
  afterAll(async () => {
    client?.close();
    await publisher?.disconnect();
    await svc?.lifecycle.stop();
    await conn?.close();
    await receiver.stop();
  });

  it('refuses internal, metadata and plain-http public addresses and unknown types; shows the secret once', async () => {
    const ctx = tenant();
    for (const url of [
      'http://169.254.169.254/latest/meta-data',
      'https://10.0.0.8/hook',
      'http://example.com/hook',
      'https://user:pw@example.com/',
      'ftp://example.com/',
    ]) {
      expect({ url, reason: (await rejection(client.registerEndpoint({ url, events: [] }, ctx))).reasonCode }).toEqual({
        url,
        reason: 'url_not_allowed',
      });
    }
    expect(
      (await rejection(client.registerEndpoint({ url: 'https://example.com/hook', events: ['call.billed'] }, ctx)))
        .reasonCode,
    ).toBe('validation_error');
    const ok = await client.registerEndpoint({ url: 'https://example.com/hook', events: ['credits.usage'] }, ctx);
    expect(ok.secret).toMatch(/^whsec_/);
    expect(ok.endpoint).toMatchObject({
      url: 'https://example.com/hook',
      events: ['credits.usage'],
      status: 'enabled',
    });
    const listed = await client.listEndpoints({}, ctx);
    expect(listed.endpoints.map((e) => e.id)).toEqual([ok.endpoint!.id]);
    expect(JSON.stringify(listed)).not.toContain('whsec_');
    // Another tenant sees none of them; the secret is sealed at rest.
    expect((await client.listEndpoints({}, tenant())).endpoints).toEqual([]);
    const stored = await conn.collection('endpoints').findOne({ _id: ok.endpoint!.id as never });
    expect(JSON.stringify(stored)).not.toContain(ok.secret.slice(6));
  });

  it('answers the types some endpoint of the tenant receives: paused endpoints count, deleted ones do not', async () => {
    const ctx = tenant();
    const types = async () => (await client.listSubscribedTypes({}, ctx)).types;
    expect(await types()).toEqual([]);
    const usage = await client.registerEndpoint({ url: 'https://example.com/usage', events: ['credits.usage'] }, ctx);
    const billed = await client.registerEndpoint(
      { url: 'https://example.com/billed', events: ['call.outbound.billed', 'credits.usage'] },
      ctx,
    );
    expect(await types()).toEqual(['call.outbound.billed', 'credits.usage']);
    await client.updateEndpoint({ endpointId: billed.endpoint!.id, enabled: false, setEvents: false, events: [] }, {});
    expect(await types()).toEqual(['call.outbound.billed', 'credits.usage']);
    await client.deleteEndpoint({ endpointId: billed.endpoint!.id }, {});
    expect(await types()).toEqual(['credits.usage']);
    // An endpoint registered without a list receives every type.
    await client.registerEndpoint({ url: 'https://example.com/all', events: [] }, ctx);
    expect(await types()).toEqual(expect.arrayContaining(['contact.status_changed', 'agent.script_ready']));
    expect((await client.listSubscribedTypes({}, tenant())).types).toEqual([]);
    expect(usage.endpoint?.events).toEqual(['credits.usage']);
  });

  it('delivers a billed call once, signed, with the ledger fields, to the subscribed endpoints only', async () => {
    const ctx = tenant();
    const all = await endpoint(ctx);
    const usageOnly = await endpoint(ctx, ['credits.usage']);
    const callId = randomUUID();
    await publisher.send([billed(ctx, callId), statusChanged(ctx)]);
    const got = await eventually(
      'two deliveries',
      () => (receiver.at(all.path).length >= 2 ? receiver.at(all.path) : undefined),
      30_000,
      { intervalMs: 50 },
    );
    const bodies = got.map((r) => JSON.parse(r.body) as { type: string; data: Record<string, unknown> });
    expect(bodies.map((b) => b.type).sort()).toEqual(['call.outbound.billed', 'contact.status_changed']);
    expect(bodies.find((b) => b.type === 'call.outbound.billed')!.data).toMatchObject({
      callId,
      creditsCharged: 4,
      balanceAfter: 96,
      billingStatus: 'charged',
      transactionId: `tx-${callId}`,
      sandbox: false,
    });
    expect(bodies.find((b) => b.type === 'contact.status_changed')!.data).toMatchObject({
      status: 'completed',
      sandbox: true,
    });
    expect(got.every((r) => r.verifiedBy.length === 1 && r.headers['content-type'] === 'application/json')).toBe(true);
    await eventually(
      'succeeded',
      async () => (await deliveries(all.id)).every((d) => d.status === 'succeeded'),
      30_000,
      { intervalMs: 50 },
    );
    expect(
      (await deliveries(all.id)).map((d) => ({ attempts: d.attempts, status: d.status, code: d.lastStatusCode })),
    ).toEqual([
      { attempts: 1, status: 'succeeded', code: 204 },
      { attempts: 1, status: 'succeeded', code: 204 },
    ]);
    expect(receiver.at(usageOnly.path)).toEqual([]);
    // The same platform event again (Kafka redelivers), then a new one: only the new one is sent.
    await publisher.send([billed(ctx, callId)]);
    await publisher.send([billed(ctx)]);
    await eventually('the new event', () => receiver.at(all.path).length >= 3, 30_000, { intervalMs: 50 });
    await new Promise((r) => setTimeout(r, 500));
    expect(receiver.at(all.path)).toHaveLength(3);
    expect(
      receiver.at(all.path).filter((r) => (JSON.parse(r.body) as { data: { callId?: string } }).data.callId === callId),
    ).toHaveLength(1);
  });

  it('retries 5xx, 429 (after Retry-After), timeouts and redirects with the same id and body, until a 2xx', async () => {
    const ctx = tenant();
    const target = new Receiver();
    await target.start();
    try {
      const ep = await endpoint(ctx);
      receiver.behave = (path, call): Answer => {
        if (path !== ep.path) return { status: 204 };
        if (call === 1) return { status: 503 };
        if (call === 2) return { status: 429, headers: { 'retry-after': '1' } };
        if (call === 3) return { status: 200, hang: true };
        if (call === 4) return { status: 302, headers: { location: `${target.base}/internal` } };
        return { status: 200 };
      };
      await publisher.send([billed(ctx)]);
      const got = await eventually(
        'the fifth attempt',
        () => (receiver.at(ep.path).length >= 5 ? receiver.at(ep.path) : undefined),
        20_000,
        { intervalMs: 50 },
      );
      expect(new Set(got.map((r) => r.id)).size).toBe(1);
      expect(new Set(got.map((r) => r.body)).size).toBe(1);
      expect(got.every((r) => r.verifiedBy.length === 1)).toBe(true);
      // Retry-After: 1 held the third attempt back at least a second (the schedule said 400 ms).
      expect(got[2]!.at - got[1]!.at).toBeGreaterThanOrEqual(950);
      // The redirect was an answer, not followed.
      expect(target.received).toEqual([]);
      const [d] = await eventually(
        'succeeded',
        async () => ((await deliveries(ep.id))[0]?.status === 'succeeded' ? deliveries(ep.id) : undefined),
        30_000,
        { intervalMs: 50 },
      );
      expect({ attempts: d!.attempts, code: d!.lastStatusCode }).toEqual({ attempts: 5, code: 200 });
      expect((await svc.deliveries.attempts(d!.id)).map((a) => a.statusCode ?? a.error)).toEqual([
        503,
        429,
        'timeout',
        302,
        200,
      ]);
    } finally {
      receiver.behave = () => ({ status: 204 });
      await target.stop();
    }
  });

  it('takes a 10 MB answer as delivered (the answer is read up to 64 KiB, then cut)', async () => {
    const ctx = tenant();
    const ep = await endpoint(ctx);
    receiver.behave = (path) => (path === ep.path ? { status: 200, bodyBytes: 10 * 1024 * 1024 } : { status: 204 });
    try {
      await publisher.send([billed(ctx)]);
      await eventually('succeeded', async () => (await deliveries(ep.id))[0]?.status === 'succeeded', 30_000, {
        intervalMs: 50,
      });
      expect(receiver.at(ep.path)).toHaveLength(1);
    } finally {
      receiver.behave = () => ({ status: 204 });
    }
  });

  it('fails a delivery when the schedule runs out, and recovers it (and only it) on request', async () => {
    const ctx = tenant();
    const ep = await endpoint(ctx);
    let down = true;
    receiver.behave = (path) => (path === ep.path && down ? { status: 500 } : { status: 204 });
    try {
      const since = new Date(Date.now() - 1_000);
      await publisher.send([billed(ctx)]);
      const [failed] = await eventually(
        'failed',
        async () => ((await deliveries(ep.id))[0]?.status === 'failed' ? deliveries(ep.id) : undefined),
        30_000,
        { intervalMs: 50 },
      );
      expect({ attempts: failed!.attempts, code: failed!.lastStatusCode, next: failed!.nextAttemptTime }).toEqual({
        attempts: 5,
        code: 500,
        next: undefined,
      });
      // A second event that succeeds is not sent again by the recovery.
      down = false;
      await publisher.send([billed(ctx)]);
      await eventually(
        'second delivered',
        async () => (await deliveries(ep.id)).filter((d) => d.status === 'succeeded').length === 1,
        30_000,
        { intervalMs: 50 },
      );
      const before = receiver.at(ep.path).length;
      expect((await client.recoverDeliveries({ endpointId: ep.id, since }, {})).queued).toBe(1);
      await eventually(
        'recovered',
        async () => (await deliveries(ep.id)).every((d) => d.status === 'succeeded'),
        30_000,
        { intervalMs: 50 },
      );
      const again = receiver.at(ep.path).slice(before);
      expect(again).toHaveLength(1);
      expect(again[0]!.id).toBe(failed!.eventId);
      expect(
        (
          await rejection(
            client.recoverDeliveries(
              { endpointId: ep.id, since: new Date(), until: new Date(Date.now() - 60_000) },
              {},
            ),
          )
        ).reasonCode,
      ).toBe('validation_error');
      expect(
        (await rejection(client.recoverDeliveries({ endpointId: 'ep_nonexistent00000000', since }, {}))).reasonCode,
      ).toBe('not_found');
    } finally {
      receiver.behave = () => ({ status: 204 });
    }
  });

  it('disables an endpoint that answers 410: nothing more is sent until it is recovered', async () => {
    const ctx = tenant();
    const ep = await endpoint(ctx);
    let gone = true;
    receiver.behave = (path) => (path === ep.path && gone ? { status: 410 } : { status: 204 });
    try {
      const since = new Date(Date.now() - 1_000);
      await publisher.send([billed(ctx)]);
      await eventually(
        'disabled',
        async () => (await client.listEndpoints({}, ctx)).endpoints[0]?.status === 'disabled',
        30_000,
        { intervalMs: 50 },
      );
      expect((await client.listEndpoints({}, ctx)).endpoints[0]).toMatchObject({
        status: 'disabled',
        disabledReason: 'gone',
      });
      // An event while it is disabled is kept, failed without an attempt, for a recovery to send.
      await publisher.send([billed(ctx)]);
      const both = await eventually(
        'the second delivery',
        async () => ((await deliveries(ep.id)).length === 2 ? deliveries(ep.id) : undefined),
        30_000,
        { intervalMs: 50 },
      );
      expect(
        both.map((d) => ({ status: d.status, attempts: d.attempts, code: d.lastStatusCode, error: d.lastError })),
      ).toEqual([
        { status: 'failed', attempts: 0, code: undefined, error: 'endpoint_disabled' },
        { status: 'failed', attempts: 1, code: 410, error: undefined },
      ]);
      expect(receiver.at(ep.path)).toHaveLength(1);
      gone = false;
      expect((await client.recoverDeliveries({ endpointId: ep.id, since }, {})).queued).toBe(2);
      await eventually('both delivered after recovery', () => receiver.at(ep.path).length === 3, 30_000, {
        intervalMs: 50,
      });
      expect(new Set(receiver.at(ep.path).map((r) => r.id)).size).toBe(2);
      expect((await client.listEndpoints({}, ctx)).endpoints[0]).toMatchObject({ status: 'enabled' });
      expect((await client.listEndpoints({}, ctx)).endpoints[0]!.disabledReason).toBeUndefined();
    } finally {
      receiver.behave = () => ({ status: 204 });
    }
  });

  it('signs with both secrets during a rotation', async () => {
    const ctx = tenant();
    const ep = await endpoint(ctx);
    const rotated = await client.rotateSecret({ endpointId: ep.id }, {});
    expect(rotated.secret).toMatch(/^whsec_/);
    expect(rotated.secret).not.toBe(ep.secret);
    receiver.secrets.set(ep.path, [ep.secret, rotated.secret]);
    await publisher.send([billed(ctx)]);
    const [r] = await eventually(
      'delivered',
      () => (receiver.at(ep.path).length === 1 ? receiver.at(ep.path) : undefined),
      30_000,
      { intervalMs: 50 },
    );
    expect(r!.verifiedBy).toEqual([0, 1]);
    expect(String(r!.headers['webhook-signature']).split(' ')).toHaveLength(2);
  });

  it('sends nothing for a tenant without endpoints, and records nothing', async () => {
    const ctx = tenant();
    const other = tenant();
    const marker = await endpoint(other);
    await publisher.send([billed(ctx), billed(other)]);
    await eventually('the other tenant’s event', () => receiver.at(marker.path).length === 1, 30_000, {
      intervalMs: 50,
    });
    expect(await conn.collection('deliveries').countDocuments({ tenantId: ctx.tenantId })).toBe(0);
    expect(await conn.collection('messages').countDocuments({ tenantId: ctx.tenantId })).toBe(0);
  });

  it('a burst of 10,000 events to a slow endpoint does not hold up another tenant’s deliveries', async () => {
    const slow = tenant();
    const healthy = tenant();
    const slowEp = await endpoint(slow);
    const healthyEp = await endpoint(healthy);
    receiver.behave = (path) => (path === slowEp.path ? { status: 204, delayMs: 1_000 } : { status: 204 });
    try {
      const before = await conn.collection('deliveries').estimatedDocumentCount();
      const burst = Array.from({ length: 10_000 }, () => billed(slow));
      for (let i = 0; i < burst.length; i += 1_000) await publisher.send(burst.slice(i, i + 1_000));
      // Every event of the burst is stored and held for the slow endpoint (4 at a time, 1 s each)…
      const t0 = Date.now();
      const takenIn = async () => {
        await new Promise((r) => setTimeout(r, 500)); // a count is a scan locally: not too often
        const n = await conn.collection('deliveries').estimatedDocumentCount();
        if (process.env.WEBHOOKS_IT_PROGRESS) process.stderr.write(`PROGRESS ${Date.now() - t0} ms ${n - before}\n`);
        return n >= before + 10_000;
      };
      // Generous: the 10,000 events are taken in well within it on the local store.
      await eventually('the burst taken in', takenIn, 280_000, { intervalMs: 50 });
      // …and the healthy tenant's events go out at once meanwhile.
      await publisher.send(Array.from({ length: 5 }, () => billed(healthy)));
      await eventually('healthy deliveries', () => receiver.at(healthyEp.path).length === 5, 10_000, {
        intervalMs: 50,
      });
      expect(receiver.at(healthyEp.path).every((r) => r.verifiedBy.length === 1)).toBe(true);
      expect(receiver.at(slowEp.path).length).toBeLessThan(1_000);
    } finally {
      receiver.behave = () => ({ status: 204 });
    }
  }, 360_000);
});
