import { errorOf } from './errors';
import type { components } from './generated/api';

export type CallSummary = components['schemas']['CallSummary'];

/** One change of a call, or a word from the stream itself (`stream.reset`, `stream.dropped`). */
export type CallStreamEvent =
  | {
      kind: 'call';
      id: string;
      event: 'call.started' | 'call.ringing' | 'call.answered' | 'call.ended' | 'call.billed';
      call: CallSummary & { sandbox?: true };
    }
  | { kind: 'stream'; id?: string; event: string; data: unknown };

export interface FollowOptions {
  direction?: 'inbound' | 'outbound';
  campaignId?: string;
  agentId?: string;
  /** Go on after this event's `id` (one you stored), instead of from now. */
  lastEventId?: string;
  /** Ends the iteration (and the connection) when aborted. */
  signal?: AbortSignal;
  /** The longest wait before reconnecting after the stream ended or failed (default 30 s). */
  maxReconnectDelayMs?: number;
}

interface Connection {
  baseUrl: string;
  apiKey: string;
  send: (request: Request) => Promise<Response>;
}

/**
 * `GET /calls/stream` as an async iterator: every change of the tenant's calls, in order, for as long
 * as the caller iterates. The stream reconnects by itself when it ends (a gateway that stops, a
 * network that drops, a `stream.dropped` for a slow reader) with the last `id` it yielded, so
 * nothing is missed and nothing repeated; an answer of 400 or more is thrown as `VoiceApiError`
 * (a 429 over the key's cap and a 503 are waited out and tried again).
 */
export async function* followCalls(conn: Connection, opts: FollowOptions = {}): AsyncGenerator<CallStreamEvent> {
  let lastEventId = opts.lastEventId;
  let retryMs = 1_000;
  let failures = 0;
  const query = new URLSearchParams({
    ...(opts.direction && { direction: opts.direction }),
    ...(opts.campaignId && { campaignId: opts.campaignId }),
    ...(opts.agentId && { agentId: opts.agentId }),
  }).toString();
  while (!opts.signal?.aborted) {
    const request = new Request(`${conn.baseUrl}/api/v1/calls/stream${query ? `?${query}` : ''}`, {
      headers: {
        authorization: `Bearer ${conn.apiKey}`,
        accept: 'text/event-stream',
        ...(lastEventId !== undefined && { 'last-event-id': lastEventId }),
      },
      ...(opts.signal && { signal: opts.signal }),
    });
    let response: Response;
    try {
      response = await conn.send(request);
    } catch {
      // The network failed (or the caller aborted): tried again after a growing wait.
      if (opts.signal?.aborted) return;
      await pause(backoff(++failures, opts), opts.signal);
      continue;
    }
    if (response.status >= 400) {
      const error = await errorOf(response);
      if (response.status !== 429 && response.status !== 503) throw error;
      await pause(Math.min(opts.maxReconnectDelayMs ?? 30_000, (error.retryAfterSeconds ?? 1) * 1000), opts.signal);
      continue;
    }
    failures = 0;
    try {
      for await (const e of events(response)) {
        if (e.retry !== undefined) retryMs = e.retry;
        if (e.data === undefined) continue;
        if (e.id !== undefined) lastEventId = e.id;
        const data: unknown = JSON.parse(e.data);
        if (e.event.startsWith('call.'))
          yield {
            kind: 'call',
            id: e.id!,
            event: e.event as Extract<CallStreamEvent, { kind: 'call' }>['event'],
            call: data as CallSummary,
          };
        else yield { kind: 'stream', ...(e.id !== undefined && { id: e.id }), event: e.event, data };
      }
    } catch {
      if (opts.signal?.aborted) return;
      // The connection broke mid-stream: reconnect after `retry`, from the last id.
    }
    await pause(retryMs, opts.signal);
  }
}

const backoff = (failures: number, opts: FollowOptions) =>
  Math.min(opts.maxReconnectDelayMs ?? 30_000, 500 * 2 ** Math.min(failures, 6));

/** Waits `ms`, or less if `signal` aborts; either way the abort listener goes with the wait (a stream reconnects for as long as it is read). */
function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const t = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** The wire format (text/event-stream): fields per line, an empty line ends an event, `:` starts a comment. */
async function* events(
  response: Response,
): AsyncGenerator<{ id?: string; event: string; data?: string; retry?: number }> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const e: { id?: string; event: string; data?: string; retry?: number } = { event: 'message' };
      for (const line of block.split('\n')) {
        if (line === '' || line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'id') e.id = value;
        else if (field === 'event') e.event = value;
        else if (field === 'data') e.data = e.data === undefined ? value : `${e.data}\n${value}`;
        else if (field === 'retry' && /^\d+$/.test(value)) e.retry = Number(value);
      }
      yield e;
    }
  }
}
