import { randomBytes, randomUUID } from 'node:crypto';
import { scopeOfRecord } from '@voiceapi/kit/grpc';
import { ensureIndexes } from '@voiceapi/kit/mongo';
import mongoose from 'mongoose';
import { bucketStart } from '../src/domain/rollup';
import { CallStore } from '../src/store/call-store';
import { RollupStore } from '../src/store/rollup-store';
import { RollupRecompute } from '../src/workers/rollups';

// The analytics rollups on the harness's store: a call's change recomputes the minute it started in,
// and its bucket as the sum of its minutes.

describe('rollup recompute (MongoDB)', () => {
  let conn: mongoose.Connection;
  let rollups: RollupStore;
  let recompute: RollupRecompute;
  const bucket = bucketStart(new Date(Date.now() - 3600_000));
  const at = (minute: number) => new Date(bucket.getTime() + minute * 60_000 + 5_000);

  beforeAll(async () => {
    conn = await mongoose
      .createConnection(process.env.MONGO_URL!, { dbName: `telephony_rollups_${randomBytes(4).toString('hex')}` })
      .asPromise();
    const calls = new CallStore(conn);
    rollups = new RollupStore(conn);
    await ensureIndexes(conn);
    recompute = new RollupRecompute({ rollups, calls });
  });
  afterAll(async () => {
    await conn.dropDatabase();
    await conn.close();
  });

  const tenant = () => scopeOfRecord(`t-${randomUUID()}`, 'live');
  const addCall = (tenantId: string, id: string, minute: number, creditsCharged: number) =>
    conn.collection('calls').insertOne({
      _id: id as never,
      tenantId,
      direction: 'outbound',
      status: 'completed',
      outcome: 'completed',
      durationSeconds: 60,
      creditsCharged,
      campaignId: 'k1',
      startedAt: at(minute),
    });
  const charge = (id: string, creditsCharged: number) =>
    conn.collection('calls').updateOne({ _id: id as never }, { $set: { creditsCharged } });
  const credits = async (scope: ReturnType<typeof tenant>) =>
    (await rollups.range(scope, bucket, new Date(bucket.getTime() + 900_000), 'outbound'))[0]?.totals.creditsCharged;
  const pass = async () => {
    while ((await recompute.runOnce()) > 0);
  };

  it('recomputes the minute a changed call started in, and its bucket as the sum of its minutes', async () => {
    const t = tenant();
    await addCall(t.tenantId, `${t.tenantId}-a`, 0, 1);
    await addCall(t.tenantId, `${t.tenantId}-b`, 5, 2);
    await rollups.markDirty(t, 'outbound', at(0), new Date());
    await rollups.markDirty(t, 'outbound', at(5), new Date());
    await pass();
    expect(await credits(t)).toBe(3);
    // Minute 5's call is charged more and marked; minute 0's changes behind the marks' back: only
    // the marked minute is read again, the other's part stands.
    await charge(`${t.tenantId}-b`, 10);
    await charge(`${t.tenantId}-a`, 100);
    await rollups.markDirty(t, 'outbound', at(5), new Date());
    await pass();
    expect(await credits(t)).toBe(1 + 10);
  });

  it('keeps a mark written again while its pass ran, even with the same time and minute', async () => {
    const t = tenant();
    await addCall(t.tenantId, `${t.tenantId}-a`, 3, 1);
    const at3 = new Date();
    await rollups.markDirty(t, 'outbound', at(3), at3);
    const [mark] = (await rollups.dirtyBuckets(1_000)).filter((m) => m.tenantId === t.tenantId);
    // Another call of the same minute ends in the same millisecond while the pass works.
    await rollups.markDirty(t, 'outbound', at(3), at3);
    await rollups.clean(t, mark!);
    expect(await conn.collection('call_rollups_dirty').countDocuments({ tenantId: t.tenantId })).toBe(1);
    await pass();
    expect(await conn.collection('call_rollups_dirty').countDocuments({ tenantId: t.tenantId })).toBe(0);
  });
});
