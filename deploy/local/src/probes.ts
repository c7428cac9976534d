/**
 * Readiness probes, with the same clients the services use: a server is ready when the MongoDB
 * driver gets an answer to `ping`, and when kafkajs sees a broker and a controller.
 */
import { fixKafkajsRequestQueueTimer } from '@voiceapi/kit/events';
import { Kafka, logLevel } from 'kafkajs';
import { MongoClient } from 'mongodb';
import type { ManagedProcess } from './children';

/** True when the server at `url` answers `ping` with ok: 1. */
export async function mongoReady(url: string, timeoutMs = 2000): Promise<boolean> {
  const client = new MongoClient(url, {
    directConnection: true,
    serverSelectionTimeoutMS: timeoutMs,
    connectTimeoutMS: timeoutMs,
    socketTimeoutMS: timeoutMs,
    maxPoolSize: 1,
  });
  try {
    await client.connect();
    const reply = await client.db('admin').command({ ping: 1 });
    return reply.ok === 1;
  } finally {
    await client.close().catch(() => undefined); // the probe has its answer: closing its client is best effort
  }
}

/**
 * True when the cluster metadata lists at least one broker and a controller: the broker is
 * unfenced and serving requests. Asks for no topic, so nothing is auto-created.
 */
export async function kafkaReady(brokers: string[], timeoutMs = 2000): Promise<boolean> {
  fixKafkajsRequestQueueTimer(); // else kafkajs 2.2.4 prints TimeoutNegativeWarning on the launcher's screen (decision 0115)
  const admin = new Kafka({
    clientId: 'local-infra-probe',
    brokers,
    logLevel: logLevel.NOTHING,
    connectionTimeout: timeoutMs,
    requestTimeout: timeoutMs,
    retry: { retries: 0 },
  }).admin();
  try {
    await admin.connect();
    const cluster = await admin.describeCluster();
    return cluster.brokers.length > 0 && cluster.controller !== null && cluster.controller >= 0;
  } finally {
    await admin.disconnect().catch(() => undefined); // the probe has its answer: closing its client is best effort
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Polls `probe` until it returns true. Fails early when the process exits or `signal` aborts, and
 * after `timeoutMs`; in every failure the process is stopped and the error carries its last output.
 */
export async function waitReady(
  proc: ManagedProcess,
  what: string,
  timeoutMs: number,
  probe: () => Promise<boolean>,
  signal?: AbortSignal,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError = '';
  while (Date.now() < deadline && !proc.hasExited() && !signal?.aborted) {
    try {
      if (await probe()) return;
    } catch (err) {
      lastError = err instanceof Error ? err.message : String(err);
    }
    if (proc.hasExited() || signal?.aborted) break;
    await sleep(250);
  }
  const reason = signal?.aborted
    ? `stopped before ${what} was ready`
    : proc.hasExited()
      ? `exited (${await proc.exited}) before ${what} was ready`
      : `${what} not ready after ${timeoutMs / 1000} s${lastError ? ` (last probe error: ${lastError})` : ''}`;
  await proc.stop();
  throw new Error(`${proc.name} ${reason}; last output:\n${proc.tail()}`);
}
