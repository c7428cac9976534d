import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startKafka, type KafkaHandle } from '@voiceapi/local-infra';
import { freePort } from '../harness/processes';
import { startSystem, type System } from '../harness/system';
import { sleep } from '../harness/wait';
import { callsAcross, connect, serviceEnv, type Conns } from './calls-across';

// Telephony as a real process, killed with SIGKILL while calls are in progress and started again;
// then the whole system through a Kafka restart (the scenario: ./calls-across.ts).
describe('telephony killed mid-stream', () => {
  let sys: System;
  let conn: Conns;
  jest.setTimeout(300_000);

  beforeAll(async () => {
    sys = await startSystem({ gateways: 0, serviceEnv });
    conn = await connect(sys);
  });
  afterAll(async () => {
    await conn?.telephony.close();
    await conn?.billing.close();
    await sys?.stop();
  });

  it('dials each lead once and charges each call once across a crash', async () => {
    await callsAcross(sys, conn, async () => {
      sys.services.telephony!.child.kill('SIGKILL');
      await sys.services.telephony!.stop();
      await sys.startService('telephony');
    });
  });
});

describe('Kafka restarted mid-stream', () => {
  let sys: System;
  let conn: Conns;
  let broker: KafkaHandle;
  let dataDir: string;
  let restart: () => Promise<KafkaHandle>;
  jest.setTimeout(360_000);

  beforeAll(async () => {
    // A broker of this suite's own, so stopping it disturbs no other suite; the system is started
    // against it.
    dataDir = mkdtempSync(path.join(tmpdir(), 'telephony-kafka-'));
    const [port, controllerPort] = [await freePort(), await freePort()];
    restart = () => startKafka({ dataDir, port, controllerPort });
    broker = await restart();
    sys = await startSystem({ gateways: 0, serviceEnv, servers: { KAFKA_BROKERS: broker.brokers.join(',') } });
    conn = await connect(sys);
  });
  afterAll(async () => {
    await conn?.telephony.close();
    await conn?.billing.close();
    await sys?.stop();
    await broker?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('dials each lead once and charges each call once across a Kafka restart', async () => {
    await callsAcross(sys, conn, async () => {
      // Calls in progress end meanwhile; their events and the next dial requests wait in the outboxes.
      await broker.stop();
      await sleep(5_000);
      broker = await restart();
    });
  });
});
