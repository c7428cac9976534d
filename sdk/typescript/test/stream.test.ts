import { getEventListeners } from 'node:events';
import { VoiceApi } from '../src/client';
import type { CallStreamEvent } from '../src/stream';

describe('followCalls', () => {
  it('reconnects more than ten times and leaves no abort listener of its waits behind', async () => {
    // A `Request` made with the caller's signal adds an abort listener of its own (undici's), dropped
    // only once the request is collected. Count what one adds, and keep every request the stream
    // sends alive, so that whatever else is on the signal is what the stream's waits left there.
    const probe = new AbortController();
    const probeRequest = new Request('http://127.0.0.1/', { signal: probe.signal });
    const perRequest = getEventListeners(probe.signal, 'abort').length;
    expect(probeRequest.signal.aborted).toBe(false);

    const RECONNECTS = 15;
    const stop = new AbortController();
    const requests: Request[] = [];
    const leftBehind: number[] = [];
    const send = async (request: Request): Promise<Response> => {
      requests.push(request);
      leftBehind.push(getEventListeners(stop.signal, 'abort').length - requests.length * perRequest);
      if (requests.length > RECONNECTS) {
        stop.abort();
        throw new Error('aborted');
      }
      // One event, then the stream ends: the client waits `retry` (0 ms) and connects again.
      const n = requests.length;
      return new Response(`retry: 0\nid: ${n}\nevent: call.started\ndata: {"id":"c${n}"}\n\n`, {
        status: 200,
        headers: { 'content-type': 'text/event-stream' },
      });
    };

    const seen: CallStreamEvent[] = [];
    for await (const e of new VoiceApi({ apiKey: 'sk_sandbox_test', fetch: send }).followCalls({ signal: stop.signal }))
      seen.push(e);

    expect(requests).toHaveLength(RECONNECTS + 1);
    expect(requests[0]!.url).toBe('http://127.0.0.1:8080/api/v1/calls/stream');
    expect(seen.map((e) => e.id)).toEqual(Array.from({ length: RECONNECTS }, (_, i) => String(i + 1)));
    // Each connection goes on after the last event the one before it yielded.
    expect(requests.map((r) => r.headers.get('last-event-id'))).toEqual([
      null,
      ...Array.from({ length: RECONNECTS }, (_, i) => String(i + 1)),
    ]);
    // No wait's listener outlived its wait: at every connection the signal held only the requests' own.
    expect(leftBehind).toEqual(Array.from({ length: RECONNECTS + 1 }, () => 0));
  });
});
