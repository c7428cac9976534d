import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { S3ObjectStore } from '@voiceapi/kit/objects';
import { objectStoreEnv, startObjectStore, type ObjectStoreHandle } from '@voiceapi/local-infra';
import { s3SettingsFor } from '../harness/infra';
import { freePort } from '../harness/processes';
import { startSystem, type System } from '../harness/system';
import { eventually } from '../harness/wait';
import { callsAcross, connect, serviceEnv, type Conns } from './calls-across';

// The object store killed with SIGKILL while calls end, and started again: calls still end, are
// charged and announced (the scenario: ./calls-across.ts); the recordings of the calls that ended
// while it was down are written once it is back, and no call points at a recording that is not there.
describe('the object store killed while calls end', () => {
  let sys: System;
  let conn: Conns;
  let objects: ObjectStoreHandle;
  let dataDir: string;
  let restart: () => Promise<ObjectStoreHandle>;
  jest.setTimeout(360_000);

  beforeAll(async () => {
    // A server of this suite's own, so killing it disturbs no other suite.
    dataDir = mkdtempSync(path.join(tmpdir(), 'telephony-objects-'));
    const port = await freePort();
    restart = () => startObjectStore({ dataDir, port });
    objects = await restart();
    sys = await startSystem({ gateways: 0, serviceEnv, servers: { OBJECT_STORE_ENDPOINT: objects.endpoint } });
    conn = await connect(sys);
  });
  afterAll(async () => {
    await conn?.telephony.close();
    await conn?.billing.close();
    await sys?.stop();
    await objects?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('ends, charges and announces every call, and stores the recordings missed once the store is back', async () => {
    const calls = conn.telephony.collection('calls');
    const ctx = await callsAcross(sys, conn, async () => {
      process.kill(objects.pid, 'SIGKILL');
      await objects.exited;
      // Down until a call has ended without its recording: the call says it has none, and is due to be stored again.
      await eventually(
        'a call ended while the object store was down',
        async () => ((await calls.findOne({ recordingDueAt: { $exists: true } })) ? true : undefined),
        60_000,
        { intervalMs: 100 },
      );
      const due = await calls.findOne({ recordingDueAt: { $exists: true } });
      expect(due).toMatchObject({ hasRecording: false });
      expect(due!.recording).toBeUndefined();
      objects = await restart();
    });

    // Every answered call's recording, stored at last: the row names it, and the object is there at its size.
    const answered = { tenantId: ctx.tenantId, durationSeconds: { $gt: 0 } };
    await eventually(
      "every answered call's recording stored",
      async () =>
        (await calls.countDocuments({ ...answered, hasRecording: true, recordingDueAt: { $exists: false } })) ===
        (await calls.countDocuments(answered))
          ? true
          : undefined,
      120_000,
      { intervalMs: 250 },
    );
    const store = new S3ObjectStore(s3SettingsFor('voiceapi-recordings', objectStoreEnv(objects)));
    const rows = await calls.find(answered).toArray();
    expect(rows.length).toBeGreaterThan(0);
    for (const row of rows) {
      const head = await store.head(row.recording.key);
      expect({ id: row._id, size: head?.sizeBytes }).toEqual({ id: row._id, size: row.recording.sizeBytes });
    }
  });
});
