/**
 * Webhook deliveries (`make bench`). Measures, in one run on this machine, with the real gateway,
 * billing and webhooks services on the embedded store and Kafka, and a real local receiver that verifies
 * every signature with the Standard Webhooks library:
 *   (a) deliveries per second: a burst of credit-usage events for one endpoint, from the first
 *       event published to the last delivery received (fan-out, signing and sending together);
 *   (b) end of call → billed webhook received: calls ending at a steady rate (100/s), each settled
 *       with billing (SettleCalls) and its end announced with its charge on the call stream, as
 *       telephony does; webhooks delivers it; p50/p99 of the time from the call's end to the
 *       receiver holding `call.inbound.billed` (target < 1 s).
 * Writes the webhooks section of docs/performance.md. It reports; it never fails on time.
 */
import { randomUUID } from 'node:crypto';
import { createKafka, eventRecord, EventPublisher } from '@voiceapi/kit/events';
import { createPromiseClient } from '@voiceapi/kit/grpc';
import { createLogger } from '@voiceapi/kit/service';
import { voiceapi } from '@voiceapi/proto';
import { Receiver } from '../../services/webhooks/test/receiver';
import { provideInfra, useInfra } from '../harness/infra';
import { call, startSystem, tenantWithKey } from '../harness/system';
import { perOperation, storeOpsDelta } from '../harness/store-ops';
import { writePerformanceSection } from './report';

const BURST = Number(process.env.BENCH_WEBHOOK_BURST ?? 5_000);
const ROUNDS = 3;
const met = (ok: boolean) => (ok ? 'yes' : 'no');
const CALLS_PER_SECOND = Number(process.env.BENCH_CALLS_PER_SECOND ?? 100);
const CALL_SECONDS = Number(process.env.BENCH_CALL_SECONDS ?? 20);
const { BillingUsageEvent, TelephonyCallEvent, CallDirection } = voiceapi.events.v1;

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};
const waitUntil = async (what: string, done: () => boolean, timeoutMs: number) => {
  const until = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > until) throw new Error(`not in time: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
};

async function main(): Promise<void> {
  const infra = await provideInfra((l) => process.stderr.write(`[infra] ${l}\n`));
  useInfra(infra);
  const receiver = await new Receiver().start();
  const sys = await startSystem({
    gatewayEnv: { LOG_LEVEL: 'warn', RESPONSE_SCHEMA_CHECK: 'false' },
    serviceEnv: {
      webhooks: { OUTBOUND_ALLOWLIST: receiver.hostPort, LOG_LEVEL: 'warn' },
      billing: { LOG_LEVEL: 'warn' },
    },
  });
  const gw = sys.gateways[0]!.url;
  const publisher = new EventPublisher(
    createKafka({
      brokers: infra.kafkaBrokers.split(','),
      clientId: 'bench-webhooks',
      log: createLogger('bench', 'silent'),
    }),
  );
  await publisher.connect();
  const admin = (path: string, body: unknown) => call(`${gw}/admin/v1${path}`, { admin: true, body });
  const register = async (tenantId: string, events: string[]) => {
    const path = `/${randomUUID()}`;
    const r = await admin(`/tenants/${tenantId}/webhooks`, { url: `${receiver.base}${path}`, events });
    if (r.status !== 201) throw new Error(`register: ${r.status} ${JSON.stringify(r.body)}`);
    receiver.secrets.set(path, [r.body.webhook.secret]);
    return path;
  };
  try {
    // ---- (a) deliveries per second ----
    const a = await tenantWithKey(gw);
    const burstPath = await register(a.tenantId, ['credits.usage']);
    // Three bursts in a row, each on the deliveries the ones before stored: the rate must not decline.
    const bursts: { perSecond: number; seconds: number; ops: string }[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const usage = Array.from({ length: BURST }, (_, i) =>
        eventRecord(
          BillingUsageEvent,
          a.tenantId,
          BillingUsageEvent.fromPartial({
            occurTime: new Date(),
            event: {
              $case: 'creditsUsage',
              creditsUsage: {
                tenantId: a.tenantId,
                transactionId: randomUUID(),
                type: 'call_deduction',
                credits: 1,
                balanceAfter: BURST - i,
                reference: `bench:${round}:${i}`,
              },
            },
          }),
        ),
      );
      const ops0 = await sys.storeOps();
      const t0 = performance.now();
      for (let i = 0; i < usage.length; i += 500) await publisher.send(usage.slice(i, i + 500));
      await waitUntil('the burst delivered', () => receiver.at(burstPath).length >= BURST * (round + 1), 600_000);
      const seconds = (performance.now() - t0) / 1000;
      const ops = perOperation(storeOpsDelta(ops0, await sys.storeOps()), BURST, 'delivery');
      bursts.push({ perSecond: BURST / seconds, seconds, ops });
      process.stdout.write(
        `burst ${round + 1}: ${BURST} deliveries in ${seconds.toFixed(1)} s = ${(BURST / seconds).toFixed(0)}/s; store operations ${ops}\n`,
      );
    }
    const verified = receiver.at(burstPath).every((r) => r.verifiedBy.length === 1);
    const perSecond = bursts[0]!.perSecond;
    const opsPerDelivery = bursts[0]!.ops;
    const decline = bursts[ROUNDS - 1]!.perSecond / perSecond;

    // ---- (b) end of call → billed webhook, at a steady rate ----
    const b = await tenantWithKey(gw);
    if ((await admin(`/tenants/${b.tenantId}/credits`, { amount: 1_000_000 })).status !== 201)
      throw new Error('top-up failed');
    const billedPath = await register(b.tenantId, ['call.inbound.billed']);
    const endedAt = new Map<string, number>();
    const billing = createPromiseClient(voiceapi.billing.v1.BillingServiceService, `127.0.0.1:${sys.ports.billing}`, {
      timeoutMs: 20_000,
    });
    const sends: Promise<unknown>[] = [];
    const total = CALLS_PER_SECOND * CALL_SECONDS;
    const start = Date.now();
    for (let i = 0; i < total; i++) {
      // Paced by the clock, not by the sends: a late tick sends what is due.
      const due = start + (i * 1000) / CALLS_PER_SECOND;
      if (due > Date.now()) await new Promise((r) => setTimeout(r, due - Date.now()));
      const callId = randomUUID();
      const end = new Date();
      endedAt.set(callId, end.getTime());
      const settled = billing.settleCalls(
        {
          calls: [
            {
              callId,
              direction: voiceapi.billing.v1.CallDirection.CALL_DIRECTION_INBOUND,
              durationSeconds: 30,
              holdFailed: false,
              endTime: end,
            },
          ],
        },
        { tenantId: b.tenantId, keyMode: 'live' },
      );
      sends.push(
        settled.then(({ settlements: [s] }) =>
          publisher.send([
            eventRecord(
              TelephonyCallEvent,
              callId,
              TelephonyCallEvent.fromPartial({
                occurTime: end,
                event: {
                  $case: 'callEnded',
                  callEnded: {
                    callId,
                    tenantId: b.tenantId,
                    direction: CallDirection.CALL_DIRECTION_INBOUND,
                    durationSeconds: 30,
                    startTime: new Date(end.getTime() - 30_000),
                    endTime: end,
                    outcome: 'completed',
                    charge: {
                      billingStatus: s!.billingStatus,
                      creditsCharged: s!.creditsCharged,
                      transactionId: s!.transactionId,
                      ledgerSeq: s!.ledgerSeq,
                      balanceAfter: s!.balanceAfter,
                      billTime: s!.billTime,
                    },
                  },
                },
              }),
            ),
          ]),
        ),
      );
    }
    await Promise.all(sends);
    const sendSeconds = (Date.now() - start) / 1000;
    await waitUntil(
      'every billed webhook',
      () => new Set(receiver.at(billedPath).map((r) => r.id)).size >= total,
      300_000,
    );
    const latencies: number[] = [];
    billing.close();
    // The webhooks service's own share: from billing's settlement (the message's timestamp) to the receiver.
    const own: number[] = [];
    const seen = new Set<string>();
    for (const r of receiver.at(billedPath)) {
      if (seen.has(r.id)) continue;
      seen.add(r.id);
      const m = JSON.parse(r.body) as { timestamp: string; data: { callId: string } };
      latencies.push(r.at - endedAt.get(m.data.callId)!);
      own.push(r.at - Date.parse(m.timestamp));
    }
    const [p50, p99, max] = [pct(latencies, 50), pct(latencies, 99), Math.max(...latencies)];
    const [own50, own99] = [pct(own, 50), pct(own, 99)];
    process.stdout.write(
      `billed: ${total} calls at ${(total / sendSeconds).toFixed(0)}/s, end → webhook p50 ${p50} ms, p99 ${p99} ms, max ${max} ms; billed → webhook p50 ${own50} ms, p99 ${own99} ms\n`,
    );

    writePerformanceSection(
      'webhooks',
      `## Webhook deliveries

\`node --import tsx test/bench/webhooks.ts\` (part of \`make bench\`): real gateway, billing and webhooks
services on the embedded store and Kafka, one run on this machine (2 cores); a local receiver answers 204 and
verifies every signature with the \`standardwebhooks\` library.

| measure | result | target | met |
|---|---|---|---|
| deliveries per second, ${ROUNDS} bursts of ${BURST.toLocaleString('en-US')} events in a row to one endpoint (publish → all received; fan-out, signing, sending) | **${bursts.map((b) => b.perSecond.toFixed(0)).join(' → ')}/s** (every signature verified: ${verified}) | ≥ 500/s | ${met(perSecond >= 500 && verified)} |
| last burst ÷ first | **${decline.toFixed(2)}** | ≥ 0.9 | ${met(decline >= 0.9)} |
| store operations per delivery, first burst | **${opsPerDelivery.split(' ')[0]}** | ≤ 1 | ${met(Number(opsPerDelivery.split(' ')[0]) <= 1)} |
| end of call → \`call.inbound.billed\` received, ${total.toLocaleString('en-US')} calls at ${(total / sendSeconds).toFixed(0)}/s (each settled with billing and its end announced with the charge, as telephony does; webhooks delivers) | p50 **${p50} ms**, p99 **${p99} ms**, max ${max} ms | p99 < 1 s | ${met(p99 < 1000)} |
| of which billing's announcement → received (the webhooks service's share) | p50 **${own50} ms**, p99 **${own99} ms** | | |

Store operations per delivery in each burst (every process counted, the background of the same seconds included):
${bursts.map((b) => b.ops).join('; ')}. What a delivery costs (decision 0138): its share of one read of the delivery ids of
the events fanned out together (a redelivered event sends nothing twice) and of one insert of the deliveries whose first
attempts ended together, each stored once with its outcome; the tenant's endpoints come from a cache. Attempts in flight to one endpoint:
16 (\`WEBHOOK_ENDPOINT_CONCURRENCY\`).`,
    );
  } finally {
    await publisher.disconnect();
    await sys.stop();
    await receiver.stop();
    await infra.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
