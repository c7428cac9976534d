import { randomBytes, randomUUID } from 'node:crypto';
import mongoose from 'mongoose';
import { createPromiseClient, type CallContext } from '@voiceapi/kit/grpc';
import { voiceapi } from '@voiceapi/proto';
import { startBilling } from '../src/main';
import { AuditStore } from '../src/store/audit-store';

const { TransactionType: T } = voiceapi.billing.v1;

// The ledger audit against the real store: wallets written through billing's own RPCs, one of
// them then made wrong in the database; the audit finds that one, and only it.
describe('billing ledger audit (gRPC + MongoDB)', () => {
  const db = `billing_audit_it_${randomBytes(4).toString('hex')}`;
  let svc: Awaited<ReturnType<typeof startBilling>>;
  let client: ReturnType<typeof createPromiseClient<typeof voiceapi.billing.v1.BillingServiceService>>;
  let conn: mongoose.Connection;

  const tenant = (): CallContext => ({ tenantId: `t-${randomUUID()}`, keyMode: 'live' });
  const hinted = async (ctx: CallContext, seq: number) => {
    const end = Date.now() + 20_000;
    for (;;) {
      const head = await conn.collection<{ _id: string; seq: number }>('wallet_heads').findOne({ _id: ctx.tenantId! });
      if ((head?.seq ?? 0) >= seq) return;
      if (Date.now() > end) throw new Error(`the head hint of ${ctx.tenantId} did not reach ${seq}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  const auditAll = async () => {
    while ((await svc.audit.pass()) === 'more');
  };

  beforeAll(async () => {
    svc = await startBilling({
      MONGO_URL: process.env.MONGO_URL,
      KAFKA_BROKERS: process.env.KAFKA_BROKERS,
      MONGO_DB: db,
      GRPC_PORT: '0',
      LOG_LEVEL: 'silent',
      INSTANCE_ID: 'billing-audit-it',
      SWEEP_INTERVAL_MS: '3600000',
      LEDGER_AUDIT_INTERVAL_MS: '3600000', // the test runs the audit itself
    });
    client = createPromiseClient(voiceapi.billing.v1.BillingServiceService, `127.0.0.1:${svc.port}`, {
      timeoutMs: 20_000,
    });
    conn = await mongoose.createConnection(process.env.MONGO_URL!, { dbName: db }).asPromise();
  });
  afterAll(async () => {
    client.close();
    await conn.close();
    await svc.lifecycle.stop();
  });

  it('finds the wallet whose balance is not what its ledger rows sum to, checks only what changed after, and keeps the finding', async () => {
    const sound = tenant();
    const broken = tenant();
    for (const ctx of [sound, broken]) {
      await client.topUp({ amount: 100, reference: `top:${randomUUID()}` }, ctx);
      await client.debit(
        {
          reference: `number:${randomUUID()}`,
          amount: 30,
          type: T.TRANSACTION_TYPE_NUMBER_PURCHASE,
          description: 'Number',
        },
        ctx,
      );
      await hinted(ctx, 2);
    }
    // A fault in the broken wallet's newest entry: its balance moved by 5 more than its row says.
    const entries = conn.collection<{ _id: string; 'state.balance': number; balanceAfter: number }>('wallet_entries');
    await entries.updateOne({ _id: `${broken.tenantId}:2` }, { $inc: { 'state.balance': 5, balanceAfter: 5 } });

    const audits = new AuditStore(conn);
    await auditAll();
    expect(await audits.unbalanced()).toBe(1);
    const marks = await audits.marks([sound.tenantId!, broken.tenantId!]);
    expect(marks.get(sound.tenantId!)).toEqual({ seq: 2, rowsSum: 70, balance: 70, unbalanced: false });
    expect(marks.get(broken.tenantId!)).toEqual({ seq: 2, rowsSum: 70, balance: 75, unbalanced: true, wrongAt: 2 });

    // The broken wallet goes on (from whichever balance this process holds for it): still unbalanced,
    // found at the same entry; the sound one stays sound.
    await client.topUp({ amount: 10, reference: `top:${randomUUID()}` }, broken);
    await client.topUp({ amount: 10, reference: `top:${randomUUID()}` }, sound);
    await hinted(broken, 3);
    await hinted(sound, 3);
    await auditAll();
    expect(await audits.unbalanced()).toBe(1);
    const after = await audits.marks([sound.tenantId!, broken.tenantId!]);
    expect(after.get(sound.tenantId!)).toEqual({ seq: 3, rowsSum: 80, balance: 80, unbalanced: false });
    expect(after.get(broken.tenantId!)).toMatchObject({ seq: 3, rowsSum: 80, unbalanced: true, wrongAt: 2 });
  });
});
