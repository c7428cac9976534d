import { randomBytes, randomUUID } from 'node:crypto';
import { scopeOfRecord } from '@voiceapi/kit/grpc';
import { ensureIndexes } from '@voiceapi/kit/mongo';
import { S3ObjectStore } from '@voiceapi/kit/objects';
import { createLogger } from '@voiceapi/kit/service';
import mongoose from 'mongoose';
import { s3SettingsFor } from '../../../test/harness/infra';
import { carrierCallId, SimulatorCarrier } from '../src/carrier/simulator';
import { CallStore } from '../src/store/call-store';
import { RecordingStore } from '../src/store/recording-store';
import { RecordingKeeper } from '../src/usecases/recording-keeper';

// A recording's life in object storage after its call (the harness's store and S3 server): stored
// again when the store could not take it as the call ended, never left behind for an erased
// contact, removed when its retention period ends.

describe('recording keeper (MongoDB + S3)', () => {
  let conn: mongoose.Connection;
  let calls: CallStore;
  let recordings: RecordingStore;
  const objects = new S3ObjectStore(s3SettingsFor(`recordings-it-${randomBytes(4).toString('hex')}`));
  const carrier = new SimulatorCarrier(1);
  const log = createLogger('recording-keeper-test', 'silent');
  const keeper = (now: Date, retentionDays?: number) =>
    new RecordingKeeper({
      calls,
      recordings,
      carrier,
      log,
      now: () => now,
      ...(retentionDays !== undefined && { retentionDays }),
    });

  beforeAll(async () => {
    conn = await mongoose
      .createConnection(process.env.MONGO_URL!, { dbName: `telephony_keeper_${randomBytes(4).toString('hex')}` })
      .asPromise();
    calls = new CallStore(conn);
    recordings = new RecordingStore(conn, objects);
    await ensureIndexes(conn);
    await objects.ensureBucket(true);
  });
  afterAll(async () => {
    await conn.dropDatabase();
    await conn.close();
  });

  /** A 90-second call that ended a minute ago, its recording not stored (the store was away). */
  const endedCall = async (fields: Record<string, unknown> = {}) => {
    const tenantId = `t-${randomUUID()}`;
    const id = `call_${randomBytes(12).toString('hex')}`;
    const endedAt = new Date(Date.now() - 60_000);
    await conn.collection('calls').insertOne({
      _id: id as never,
      tenantId,
      direction: 'outbound',
      status: 'completed',
      outcome: 'completed',
      startedAt: new Date(endedAt.getTime() - 95_000),
      endedAt,
      durationSeconds: 90,
      maxCallSeconds: 600,
      carrierCallId: carrierCallId(id),
      sandbox: false,
      holdFailed: false,
      billingStatus: 'charged',
      hasTranscript: true,
      hasAnalysis: true,
      hasRecording: false,
      recordingDueAt: endedAt,
      ...fields,
    });
    return { scope: scopeOfRecord(tenantId, 'live'), id, key: `${tenantId}/${id}.wav` };
  };
  const row = (id: string) => conn.collection('calls').findOne({ _id: id as never });

  it('stores a recording the store could not take once it answers, asked of the carrier again', async () => {
    const { id, key } = await endedCall();
    expect(await keeper(new Date()).storeDue(10)).toBeGreaterThanOrEqual(1);
    // 90 s of 8 kHz, 16-bit mono audio, in the bucket; the row says so and is no longer due.
    const head = await objects.head(key);
    expect(head?.sizeBytes).toBe(44 + 90 * 16_000);
    const after = await row(id);
    expect(after).toMatchObject({ hasRecording: true, recording: { key, sizeBytes: 44 + 90 * 16_000 } });
    expect(after!.recordingDueAt).toBeUndefined();
    expect(await keeper(new Date()).storeDue(10)).toBe(0);
  });

  it('stores a call longer than an hour: two hours of audio (115 MB) streamed up in parts', async () => {
    const { id, key } = await endedCall({ durationSeconds: 7_200 });
    await keeper(new Date()).storeDue(10);
    expect((await objects.head(key))?.sizeBytes).toBe(44 + 7_200 * 16_000);
    expect(await row(id)).toMatchObject({ hasRecording: true, recording: { key, durationSeconds: 7_200 } });
    await objects.delete(key);
  });

  it('removes what it wrote when the contact was erased while it was written', async () => {
    // Erasure after the retry read the row: the row is erased, the object it had begun to write goes too.
    const { id, key } = await endedCall({ erased: true });
    await keeper(new Date()).storeDue(10);
    expect(await objects.head(key)).toBeNull();
    expect(await row(id)).toMatchObject({ hasRecording: false, erased: true });
  });

  it('gives up when the carrier no longer has the recording: the call has none', async () => {
    const { id, key } = await endedCall({ endedAt: new Date(Date.now() - 4 * 86_400_000) });
    await keeper(new Date()).storeDue(10);
    expect(await objects.head(key)).toBeNull();
    const after = await row(id);
    expect(after).toMatchObject({ hasRecording: false });
    expect(after!.recordingDueAt).toBeUndefined();
  });

  it('keeps recordings without a retention period, and removes them, object and reference, once it ends', async () => {
    const { id, key } = await endedCall();
    await keeper(new Date()).storeDue(10);
    expect(await objects.head(key)).not.toBeNull();
    const in31Days = new Date(Date.now() + 31 * 86_400_000);
    // Kept: no period set.
    expect(await keeper(in31Days).expire(100)).toBe(0);
    // A 60-day period has not ended; a 30-day one has.
    await keeper(in31Days, 60).expire(100);
    expect(await objects.head(key)).not.toBeNull();
    expect(await keeper(in31Days, 30).expire(100)).toBeGreaterThanOrEqual(1);
    expect(await objects.head(key)).toBeNull();
    const after = await row(id);
    expect(after).toMatchObject({ hasRecording: false });
    expect(after!.recording).toBeUndefined();
    expect(await keeper(in31Days, 30).expire(100)).toBe(0);
  });
});
