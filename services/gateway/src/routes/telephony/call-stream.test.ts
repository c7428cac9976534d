import type { Readable } from 'node:stream';
import { scopeOfRecord } from '@voiceapi/kit/grpc';
import { type Logger } from '@voiceapi/kit/service';
import type { voiceapi } from '@voiceapi/proto';
import type { StreamLeaseStore } from '../../store/stream-leases';
import { CallStreams, type CallStreamSettings } from './call-stream';

// The gateway's side of GET /calls/stream, on a feed that answers at once: what a client that
// reads nothing costs, keep-alive comments, the per-key cap, and the stop.

type Read = voiceapi.telephony.v1.ReadCallFeedResponse;
const log = { info: jest.fn(), warn: jest.fn(), debug: jest.fn(), error: jest.fn() } as unknown as Logger;
const scope = scopeOfRecord('t1', 'live');
const request = { scope, keyId: 'k1', call: { tenantId: 't1' }, filter: {} };

/** Leases kept in memory: the cap across replicas is the store's (stream_leases), here one process. */
function leases(): StreamLeaseStore & { open_: Set<string> } {
  const open_ = new Set<string>();
  return {
    open_,
    open: async (_s: unknown, _k: string, id: string, max: number) => {
      if (open_.size >= max) return false;
      open_.add(id);
      return true;
    },
    renew: async () => undefined,
    close: async (_s: unknown, id: string) => void open_.delete(id),
  } as unknown as StreamLeaseStore & { open_: Set<string> };
}

/** A change whose call carries `pad` bytes of summary, so a few fill a buffer. */
function changes(n: number, from: number, pad = 1_000): Read {
  return {
    changes: Array.from({ length: n }, (_, i) => ({
      cursor: `${from + i}-abc`,
      change: 'call.ended',
      occurTime: new Date(),
      call: {
        id: `call_${from + i}`,
        direction: 'outbound',
        status: 'completed',
        startTime: new Date(),
        durationSeconds: 1,
        billingStatus: 'pending',
        hasTranscript: false,
        hasAnalysis: false,
        hasRecording: false,
        sandbox: false,
        summary: 'x'.repeat(pad),
      },
    })),
    cursor: `${from + n - 1}-abc`,
    reset: false,
  };
}

const settings = (s: Partial<CallStreamSettings>) => ({ keepAliveMs: 60_000, stallMs: 60_000, pollMs: 50, ...s });
const textOf = (stream: Readable) => {
  const parts: string[] = [];
  let chunk: Buffer | string | null;
  while ((chunk = stream.read() as Buffer | string | null) !== null) parts.push(chunk.toString());
  return parts.join('');
};

describe('CallStreams', () => {
  it('reads no further for a client that takes nothing, then drops it with a last event and lets it go', async () => {
    let reads = 0;
    const streams = new CallStreams({
      read: async () => changes(20, ++reads * 100),
      leases: leases(),
      log,
      settings: settings({ stallMs: 300 }),
    });
    const stream = await streams.start(request);
    // Nobody reads: the stream fills its buffer once and stops asking the feed.
    stream.on('readable', () => undefined);
    stream.pause();
    await new Promise((r) => setTimeout(r, 200));
    const readsWhenFull = reads;
    expect(stream.readableLength).toBeLessThan(64 * 1024 + 30_000);
    await new Promise((r) => setTimeout(r, 700));
    expect(reads).toBe(readsWhenFull);
    // Past stallMs: the last event waits at the end of the buffer, and the stream has ended.
    const text = textOf(stream);
    expect(text).toContain('event: call.ended');
    expect(text.trimEnd().split('\n\n').at(-1)).toMatch(/^event: stream\.dropped\ndata: /);
    await new Promise<void>((resolve) => (stream.destroyed ? resolve() : stream.once('close', () => resolve())));
    expect(streams.size).toBe(0);
  });

  it('sends a keep-alive comment when the feed has nothing for a while', async () => {
    const streams = new CallStreams({
      read: async () => ({ changes: [], cursor: '5-abc', reset: false }),
      leases: leases(),
      log,
      settings: settings({ keepAliveMs: 100 }),
    });
    const stream = await streams.start(request);
    const got: string[] = [];
    stream.on('data', (c: Buffer) => got.push(c.toString()));
    await new Promise((r) => setTimeout(r, 450));
    streams.closeAll();
    await new Promise<void>((resolve) => stream.once('end', () => resolve()));
    const text = got.join('');
    expect(text.startsWith('retry: 2000\n')).toBe(true);
    expect(text.match(/: keep-alive\n\n/g)?.length).toBeGreaterThanOrEqual(2);
    // The stop ends the stream with a comment saying to reconnect, nothing after it.
    expect(text.endsWith(': the server is stopping; reconnect with Last-Event-ID\n\n')).toBe(true);
  });

  it('refuses a stream over the key’s cap with rate_limited, and counts a closed one out', async () => {
    const store = leases();
    const streams = new CallStreams({
      read: async () => ({ changes: [], cursor: '1-abc', reset: false }),
      leases: store,
      log,
      settings: settings({ maxPerKey: 2 }),
    });
    const a = await streams.start(request);
    await streams.start(request);
    await expect(streams.start(request)).rejects.toMatchObject({ reasonCode: 'rate_limited' });
    a.destroy();
    await new Promise((r) => setImmediate(r));
    expect(store.open_.size).toBe(1);
    const c = await streams.start(request);
    expect(streams.size).toBe(2);
    streams.closeAll();
    c.resume();
  });

  it('sends a reset with the new cursor when the feed says the Last-Event-ID is older than it keeps', async () => {
    const streams = new CallStreams({
      read: async () => ({ changes: [], cursor: '9-abc', reset: true }),
      leases: leases(),
      log,
      settings: settings({}),
    });
    const stream = await streams.start({ ...request, lastEventId: '1-aaa' });
    const text = await new Promise<string>((resolve) => stream.once('data', (c: Buffer) => resolve(c.toString())));
    expect(text).toContain('id: 9-abc\nevent: stream.reset\ndata: ');
    streams.closeAll();
    stream.resume();
  });
});
