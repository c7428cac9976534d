import { createPromiseClient } from '@voiceapi/kit/grpc';
import { voiceapi } from '@voiceapi/proto';
import { freePort } from '../harness/processes';
import type { System } from '../harness/system';
import { sleep } from '../harness/wait';
import type { Receiver } from '../../services/webhooks/test/receiver';
import {
  expectCalledAndChargedOnce,
  pushLeads,
  startLeadStream,
  storeOf,
  summarize,
  type LeadStream,
  type StreamTenant,
} from './lead-stream';

// Availability under faults, black-box through the gateway, as an operator tried it (issue 30): a
// tenant pushes live call leads steadily while services are SIGKILLed and restarted half a second
// later (as `make run` and Kubernetes do). Lead ingest must keep answering 202 (before: 503 for about
// 30 s after billing or leads died, while the restarted process waited for its consumer group), and
// every accepted lead must still be called once and charged once, with a ledger that balances.
// The figures each scenario measured are printed (docs/performance.md, "Availability under faults").

const RESTART_AFTER_MS = 500;

describe('lead ingest stays available while services are killed', () => {
  let stream: LeadStream;
  let sys: System;
  let gw: string;
  let tenant: StreamTenant;
  let receiver: Receiver;
  const figures: string[] = [];
  jest.setTimeout(600_000);

  beforeAll(async () => {
    stream = await startLeadStream();
    ({ sys, gw, tenant, receiver } = stream);
  });
  afterAll(async () => {
    process.stderr.write(`\n[availability]\n${figures.join('\n')}\n`);
    await stream?.stop();
  });

  /** SIGKILLs the running process of a service and starts it again after RESTART_AFTER_MS; returns how long the new one took to listen. */
  async function killAndRestart(name: string): Promise<number> {
    const proc = sys.services[name]!;
    proc.child.kill('SIGKILL');
    await proc.stop();
    await sleep(RESTART_AFTER_MS);
    const started = Date.now();
    await sys.startService(name);
    return Date.now() - started;
  }

  const accepted: string[] = [];
  /** Posts answered 503: their lead may have been written before the leads process died (the answer was lost, not the write). */
  let refusedPosts = 0;

  it.each(['billing', 'leads', 'telephony', 'webhooks'])(
    'keeps accepting leads when %s is SIGKILLed and restarted',
    async (name) => {
      const flow = pushLeads(gw, tenant, 2, 20);
      await sleep(1_000);
      const killedAt = Date.now();
      const listenMs = await killAndRestart(name);
      await sleep(4_000);
      await flow.stop();
      const s = summarize(flow.posts, killedAt);
      figures.push(
        `kill ${name}: restarted process listened after ${listenMs} ms; ${s.accepted}/${s.posts} posts accepted after the kill; longest time without a 202 ${s.longestGapMs} ms; slowest answer ${s.slowestMs} ms`,
      );
      accepted.push(...flow.posts.filter((p) => p.status === 202).map((p) => p.contactId!));
      refusedPosts += s.refused.length;
      // A request that arrives during a restart is answered within its deadline, with the documented error at worst.
      for (const r of s.refused)
        expect({ status: r.status, reasonCode: r.reasonCode }).toEqual({
          status: 503,
          reasonCode: 'service_unavailable',
        });
      expect(s.slowestMs).toBeLessThan(10_000);
      // Before: billing's or leads' restart refused every post for ~30 s. Now ingest goes on: at most the
      // post in flight on a killed leads process is refused, and the rest wait out the restart.
      expect(s.share).toBeGreaterThanOrEqual(0.95);
      expect(s.longestGapMs).toBeLessThan(5_000);
    },
  );

  it('answers 202 again within 3 s of a SIGKILLed gateway (restarted at its address)', async () => {
    const flow = pushLeads(gw, tenant, 2, 20);
    await sleep(1_000);
    const gateway = sys.gateways[0]!;
    const killedAt = Date.now();
    gateway.proc.child.kill('SIGKILL');
    await gateway.proc.stop();
    await sleep(RESTART_AFTER_MS);
    const started = Date.now();
    sys.gateways[0] = await sys.startGateway({}, Number(new URL(gw).port));
    const listenMs = Date.now() - started;
    await sleep(3_000);
    await flow.stop();
    const s = summarize(flow.posts, killedAt);
    const firstBack = Math.min(
      ...flow.posts.filter((p) => p.sentAt >= killedAt && p.status === 202).map((p) => p.answeredAt),
    );
    figures.push(
      `kill the gateway: restarted gateway ready after ${listenMs} ms; first 202 ${firstBack - killedAt} ms after the kill; ${s.accepted}/${s.posts} posts accepted after the kill`,
    );
    accepted.push(...flow.posts.filter((p) => p.status === 202).map((p) => p.contactId!));
    refusedPosts += s.refused.length; // a post the gateway had passed on before it died may be stored
    // With one gateway, posts meanwhile find nothing listening (status 0); none is answered with an error.
    expect(s.refused.filter((p) => p.status !== 0)).toEqual([]);
    expect(firstBack - killedAt).toBeLessThan(5_000);
  });

  it('accepts at least 95 % of leads while billing, telephony, leads and webhooks are killed one every 4 s', async () => {
    const flow = pushLeads(gw, tenant, 2, 20);
    await sleep(1_000);
    const from = Date.now();
    const listened: string[] = [];
    for (const name of ['billing', 'telephony', 'leads', 'webhooks', 'billing', 'telephony', 'leads']) {
      const began = Date.now();
      listened.push(`${name} ${await killAndRestart(name)} ms`);
      await sleep(Math.max(0, 4_000 - (Date.now() - began)));
    }
    await flow.stop();
    const s = summarize(flow.posts, from);
    figures.push(
      `rolling kills (${listened.join(', ')}): ${s.accepted}/${s.posts} posts accepted (${(s.share * 100).toFixed(1)} %); longest time without a 202 ${s.longestGapMs} ms; slowest answer ${s.slowestMs} ms`,
    );
    accepted.push(...flow.posts.filter((p) => p.status === 202).map((p) => p.contactId!));
    refusedPosts += s.refused.length;
    for (const r of s.refused)
      expect({ status: r.status, reasonCode: r.reasonCode }).toEqual({
        status: 503,
        reasonCode: 'service_unavailable',
      });
    expect(s.share).toBeGreaterThanOrEqual(0.95);
  });

  it('called every accepted lead once and charged each call once; the ledger balances', async () => {
    expect(accepted.length).toBeGreaterThan(100);
    // A lead whose post was answered 503 (the leads process died after writing it) is called too: the answer was lost, not the write.
    await expectCalledAndChargedOnce(storeOf(sys), gw, tenant, receiver, accepted, refusedPosts);
  });

  it('serves gRPC at start while Kafka is away (its topics, producer and consumers wait in the background)', async () => {
    const dead = await freePort(); // nothing listens here
    const started = Date.now();
    const replica = await sys.startReplica('billing', { KAFKA_BROKERS: `127.0.0.1:${dead}` });
    const port = replica.port;
    try {
      const listenedMs = Date.now() - started;
      const billing = createPromiseClient(voiceapi.billing.v1.BillingServiceService, `127.0.0.1:${port}`, {
        timeoutMs: 5_000,
      });
      try {
        const { balance } = await billing.getBalance({}, { tenantId: tenant.tenantId, keyMode: 'live' });
        expect(balance?.balance).toBeGreaterThan(0);
      } finally {
        billing.close();
      }
      figures.push(`billing started with Kafka away: listened after ${listenedMs} ms and answered a balance`);
    } finally {
      await replica.proc.stop();
    }
  });
});
