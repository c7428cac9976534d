import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import mongoose from 'mongoose';
import { createPromiseClient, type CallContext } from '@voiceapi/kit/grpc';
import { voiceapi } from '@voiceapi/proto';
import { walletProblems } from '../../services/billing/test/invariants';
import { scenarioOf } from '../../services/telephony/src/carrier/simulator';
import type { System } from '../harness/system';
import { eventually } from '../harness/wait';

const quiet = (log: string) =>
  log
    .split('\n')
    .filter(
      (l) =>
        !/ECONNREFUSED|seed broker|NumberOfRetriesExceeded|TimeoutNegativeWarning|Timeout duration|trace-warnings/.test(
          l,
        ),
    )
    .join('\n');

/** Whether a process answers its health check within 2 s (a timeout's report tells a busy or stuck process from an idle one). */
const answers = (address: string) =>
  new Promise<string>((resolve) =>
    execFile(
      process.execPath,
      [path.resolve(__dirname, '../../libs/kit/dist/probe.js'), 'grpc', address],
      { env: { ...process.env, PROBE_TIMEOUT_MS: '2000' } },
      (err, out, errOut) => resolve((err ? errOut : out).trim()),
    ),
  );

const SPEEDUP = 20;
const LEADS = 30;

// The outbound calling scenario the fault tests disturb (telephony killed, Kafka restarted, the
// store killed): whatever happens in the middle, every lead is dialled once, every ended call has
// one billing outcome, the totals are what the simulated durations say, and the tenant's package
// is never exceeded.
export type Conns = { telephony: mongoose.Connection; billing: mongoose.Connection };

export async function connect(sys: System): Promise<Conns> {
  const suffix = sys.gatewayDb.replace(/^gateway_/, '');
  return {
    // The store the system was started on (a suite may give it one of its own).
    telephony: await mongoose.createConnection(sys.env.MONGO_URL!, { dbName: `telephony_${suffix}` }).asPromise(),
    billing: await mongoose.createConnection(sys.env.MONGO_URL!, { dbName: `billing_${suffix}` }).asPromise(),
  };
}

export const serviceEnv = {
  telephony: { CARRIER_SIMULATOR_SPEEDUP: String(SPEEDUP), RECOVERY_INTERVAL_MS: '500' },
  leads: { CALLING_WINDOW_DEFAULT: 'always' },
};

/**
 * Ingests LEADS call leads, disrupts the system once some calls ended and some are in progress, and
 * checks the totals after; the tenant the calls were made for.
 */
export async function callsAcross(sys: System, conn: Conns, disrupt: () => Promise<void>): Promise<CallContext> {
  const ctx: CallContext = { tenantId: `t-${randomUUID()}`, keyMode: 'live' };
  const at = (name: string) => `127.0.0.1:${sys.ports[name]}`;
  const billing = createPromiseClient(voiceapi.billing.v1.BillingServiceService, at('billing'), { timeoutMs: 20_000 });
  const leads = createPromiseClient(voiceapi.leads.v1.LeadsServiceService, at('leads'), { timeoutMs: 20_000 });
  try {
    const START = 100_000;
    await billing.topUp({ amount: START, reference: 'top:1' }, ctx);
    const { campaign } = await leads.createCampaign(
      { name: 'fault', type: '', channels: [], maxCallSeconds: 120 },
      ctx,
    );
    await leads.startCampaign({ id: campaign!.id }, ctx);
    const phones = Array.from({ length: LEADS }, (_, i) => `+1415${300 + i}${String(1000 + i * 7)}`);
    const contacts: { id: string }[] = [];
    for (const phone of phones) {
      const r = await leads.ingestLead(
        {
          campaignId: campaign!.id,
          lead: {
            phone,
            channels: ['call'],
            consent: { outboundCall: true, capturedAt: new Date(Date.now() - 60_000), source: 'test' },
            templateVariables: {},
            whatsappParams: {},
          },
        },
        ctx,
      );
      contacts.push(r.contact!);
    }
    // What the calls must cost: each number's simulated talk time, cut at 120 s, 2 credits a started minute.
    const expected = phones.reduce(
      (sum, to) =>
        sum + Math.ceil(Math.min(scenarioOf({ direction: 'outbound', to, from: null }).talkSeconds, 120) / 60) * 2,
      0,
    );

    const calls = conn.telephony.collection('calls');
    const lines = conn.telephony.collection('lines');
    // What a timeout reports: the calls by status and billing status, the lines held.
    const state = async () => ({
      calls: Object.fromEntries(
        (
          await calls
            .aggregate([
              { $match: { tenantId: ctx.tenantId } },
              { $group: { _id: { s: '$status', b: '$billingStatus' }, n: { $sum: 1 } } },
            ])
            .toArray()
        ).map((g) => [`${g._id.s}/${g._id.b}`, g.n]),
      ),
      lines: await lines.countDocuments({ tenantId: ctx.tenantId }),
      outbox: await conn.telephony.collection('outbox').countDocuments({}),
      // Billing's side: outcomes it recorded for this tenant, and announcements it has yet to relay.
      billed: await conn.billing
        .collection('wallet_entries')
        .countDocuments({ tenantId: ctx.tenantId, reference: /^call:/ }),
      billingOutbox: await conn.billing.collection('outbox').countDocuments({}),
      pending: (
        await calls.find({ tenantId: ctx.tenantId, billingStatus: 'pending' }).project({ _id: 1, endedAt: 1 }).toArray()
      ).map((c) => [c._id, c.endedAt]),
      answering: await Promise.all(['telephony', 'billing', 'leads'].map((n) => answers(at(n)))),
      // The last lines of telephony's and billing's logs, without the retry noise of an outage.
      logs: Object.fromEntries(
        ['telephony', 'billing', 'leads'].map((n) => [n, quiet(sys.services[n]?.output() ?? '').slice(-3000)]),
      ),
    });
    let most = 0;
    const sample = async () => (most = Math.max(most, await lines.countDocuments({ tenantId: ctx.tenantId })));
    await eventually(
      'some calls ended and some in progress',
      async () => {
        await sample();
        const ended = await calls.countDocuments({ tenantId: ctx.tenantId, endedAt: { $exists: true } });
        // An outbound call in progress reads `ringing` until its end (decision 0148).
        const active = await calls.countDocuments({ tenantId: ctx.tenantId, status: 'ringing' });
        return ended >= 3 && active >= 3 ? true : undefined;
      },
      120_000,
      { intervalMs: 250, retryErrors: true, detail: state },
    );

    await disrupt();

    await eventually(
      'every lead called and billed',
      async () => {
        await sample();
        const done = await calls.countDocuments({
          tenantId: ctx.tenantId,
          billingStatus: { $ne: 'pending' },
          endedAt: { $exists: true },
        });
        return done === LEADS ? true : undefined;
      },
      240_000,
      { intervalMs: 250, retryErrors: true, detail: state },
    );

    const all = await calls.find({ tenantId: ctx.tenantId }).toArray();
    // One call per lead, no lead dialled twice.
    expect(all).toHaveLength(LEADS);
    expect(new Set(all.map((c) => c.contactId)).size).toBe(LEADS);
    // Any call otherwise, with what it says of its end.
    const odd = all.filter((c) => c.status !== 'completed' || c.billingStatus !== 'charged');
    expect(
      odd.map((c) => ({
        id: c._id,
        status: c.status,
        endReason: c.endReason,
        billingStatus: c.billingStatus,
        creditsError: c.creditsError,
      })),
    ).toEqual([]);
    expect(most).toBeGreaterThan(0);
    expect(most).toBeLessThanOrEqual(10);
    // The totals are the simulated durations' charges, once each.
    const charged = all.reduce((n, c) => n + (c.creditsCharged as number), 0);
    expect(charged).toBe(expected);
    const balance = (await billing.getBalance({}, ctx)).balance!;
    expect(balance).toMatchObject({ balance: START - expected, held: 0 });
    const rows = (
      await billing.listTransactions(
        { page: { page: 1, limit: 100 }, type: voiceapi.billing.v1.TransactionType.TRANSACTION_TYPE_CALL_DEDUCTION },
        ctx,
      )
    ).transactions;
    expect(rows).toHaveLength(LEADS);
    expect(new Set(rows.map((r) => r.callId)).size).toBe(LEADS);
    expect(await walletProblems(conn.billing, ctx.tenantId!)).toEqual([]);
    // Every contact follows its call to the end (leads hears of the ends on its own, after a restart perhaps later).
    const statuses = async () =>
      Promise.all(contacts.map(async (c) => (await leads.getContact({ id: c.id }, ctx)).contact!.status));
    await eventually(
      'every contact completed',
      async () => ((await statuses()).every((s) => s === 'completed') ? true : undefined),
      120_000,
      {
        intervalMs: 250,
        retryErrors: true,
        detail: async () => ({ contacts: await statuses() }),
      },
    );
    return ctx;
  } finally {
    billing.close();
    leads.close();
  }
}
