/** One server-sent event as a client sees it (a comment line is an event named `comment`). */
export interface SseEvent {
  id?: string;
  event: string;
  data: any;
  /** When the client read it (ms since the epoch). */
  receivedAt: number;
}

/**
 * A `text/event-stream` answer read as a test client reads it: events as they arrive, `next(…)`
 * waiting for the next one matching, `close()` going away. Parses the wire format itself (field
 * lines, blank line ends an event, `:` comments), so the test sees exactly what was sent.
 */
export interface SseClient {
  status: number;
  headers: Headers;
  /** Every event so far, comments included. */
  events: SseEvent[];
  /** The next event matching `pick` (events already received count), or a timeout error. */
  next(pick?: (e: SseEvent) => boolean, timeoutMs?: number): Promise<SseEvent>;
  /** Resolves when the server ended the answer (true) or the connection failed (false). */
  ended: Promise<boolean>;
  close(): void;
  /** The body, when the answer was not a stream (an error). */
  body?: any;
}

export async function openSse(
  url: string,
  opts: { key: string; lastEventId?: string; headers?: Record<string, string> },
): Promise<SseClient> {
  const abort = new AbortController();
  const res = await fetch(url, {
    headers: {
      authorization: `Bearer ${opts.key}`,
      accept: 'text/event-stream',
      ...(opts.lastEventId !== undefined && { 'last-event-id': opts.lastEventId }),
      ...opts.headers,
    },
    signal: abort.signal,
  });
  const events: SseEvent[] = [];
  const waiters: (() => void)[] = [];
  const base = { status: res.status, headers: res.headers, events, close: () => abort.abort() };
  if (!res.headers.get('content-type')?.startsWith('text/event-stream')) {
    const text = await res.text();
    return {
      ...base,
      body: text ? JSON.parse(text) : undefined,
      ended: Promise.resolve(true),
      next: () => Promise.reject(new Error(`not a stream: ${res.status} ${text}`)),
    };
  }
  const ended = (async () => {
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true });
        let at: number;
        while ((at = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, at);
          buffer = buffer.slice(at + 2);
          const lines = block.split('\n').filter((l) => l !== '');
          if (lines.length > 0 && lines.every((l) => l.startsWith(':')))
            events.push({
              event: 'comment',
              data: lines.map((l) => l.slice(1).trim()).join('\n'),
              receivedAt: Date.now(),
            });
          else {
            const e: SseEvent = { event: 'message', data: undefined, receivedAt: Date.now() };
            const data: string[] = [];
            for (const line of lines) {
              if (line.startsWith('id: ')) e.id = line.slice(4);
              else if (line.startsWith('event: ')) e.event = line.slice(7);
              else if (line.startsWith('data: ')) data.push(line.slice(6));
            }
            if (data.length > 0) events.push({ ...e, data: JSON.parse(data.join('\n')) });
          }
          for (const w of waiters.splice(0)) w();
        }
      }
      return true;
    } catch {
      return false;
    } finally {
      for (const w of waiters.splice(0)) w();
    }
  })();
  let done = false;
  void ended.then(() => (done = true));
  let seen = 0;
  const next = async (
    pick: (e: SseEvent) => boolean = (e) => e.event !== 'comment',
    timeoutMs = 30_000,
  ): Promise<SseEvent> => {
    const until = Date.now() + timeoutMs;
    for (;;) {
      while (seen < events.length) {
        const e = events[seen++]!;
        if (pick(e)) return e;
      }
      if (done) throw new Error(`the stream ended; events: ${JSON.stringify(events.map((e) => e.event))}`);
      const left = until - Date.now();
      if (left <= 0)
        throw new Error(
          `no matching event within ${timeoutMs} ms; events: ${JSON.stringify(events.map((e) => e.event))}`,
        );
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  };
  return { ...base, ended, next };
}
