import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { commonReasons } from '@voiceapi/kit/errors';
import { type CallContext, type TenantScope } from '@voiceapi/kit/grpc';
import { type Logger } from '@voiceapi/kit/service';
import type { voiceapi } from '@voiceapi/proto';
import { refusal } from '../../http/refusals';
import type { StreamLeaseStore } from '../../store/stream-leases';
import { callJson } from './mappers';

type ReadCallFeed = (
  req: voiceapi.telephony.v1.ReadCallFeedRequest,
  ctx: CallContext,
  opts: { timeoutMs: number },
) => Promise<voiceapi.telephony.v1.ReadCallFeedResponse>;

export interface CallStreamSettings {
  /** Open streams per key, across replicas. */
  maxPerKey: number;
  /** A comment line this often keeps an idle connection open through proxies. */
  keepAliveMs: number;
  /** A client that takes nothing for this long is dropped (with a last event saying so): its stream must not hold memory. */
  stallMs: number;
  /** How long a stream's lease lasts unrenewed (a replica that died stops counting after it). */
  leaseMs: number;
  /** How long one read of telephony's feed waits for a change. */
  pollMs: number;
}

export const CALL_STREAM_DEFAULTS: CallStreamSettings = {
  maxPerKey: 5,
  keepAliveMs: 15_000,
  stallMs: 60_000,
  leaseMs: 60_000,
  pollMs: 4_000,
};

/** What a stream reads and who it is for. */
export interface StreamRequest {
  scope: TenantScope;
  keyId: string;
  call: CallContext;
  lastEventId?: string;
  filter: { direction?: string; campaignId?: string; agentId?: string };
}

/** The pause before reading again after a read came back early with nothing. */
const QUIET_RETRY_MS = 250;

const event = (name: string, data: unknown, id?: string) =>
  `${id !== undefined ? `id: ${id}\n` : ''}event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;

/**
 * The open `GET /calls/stream` streams of this replica: each a server-sent-events source reading
 * telephony's call feed after its cursor, so any replica serves any tenant's stream and a client
 * that reconnects with `Last-Event-ID` (here or elsewhere) misses nothing and repeats nothing.
 */
export class CallStreams {
  private readonly open = new Set<CallStream>();
  private closing = false;
  private readonly settings: CallStreamSettings;

  constructor(
    private readonly d: {
      read: ReadCallFeed;
      leases: StreamLeaseStore;
      log: Logger;
      settings?: Partial<CallStreamSettings>;
    },
  ) {
    this.settings = { ...CALL_STREAM_DEFAULTS, ...d.settings };
  }

  /**
   * Opens a stream: its lease (429 `rate_limited` over the key's cap), then the first read, which
   * checks the cursor (400 for one this API did not give), before anything is sent.
   */
  async start(req: StreamRequest): Promise<Readable> {
    if (this.closing) throw commonReasons.error('service_unavailable', 'the gateway is stopping; reconnect');
    const s = this.settings;
    const id = randomUUID();
    if (!(await this.d.leases.open(req.scope, req.keyId, id, s.maxPerKey, s.leaseMs))) {
      throw refusal('rate_limited', `at most ${s.maxPerKey} open streams per key; close one first`);
    }
    const stream = new CallStream(id, req, this.d.read, s, this.d.log, () => {
      this.open.delete(stream);
      void this.d.leases
        .close(req.scope, id)
        .catch((err: unknown) => this.d.log.warn({ err }, "a closed stream's lease could not be deleted; it expires"));
    });
    try {
      await stream.begin((ms) => this.d.leases.renew(req.scope, id, ms));
    } catch (err) {
      stream.destroy();
      throw err;
    }
    this.open.add(stream);
    return stream;
  }

  /** Ends every open stream cleanly (the gateway stops): each client reconnects with its `Last-Event-ID`, to another replica. */
  closeAll(): void {
    this.closing = true;
    for (const s of this.open) s.finish();
  }

  get size(): number {
    return this.open.size;
  }
}

class CallStream extends Readable {
  private cursor: string | undefined;
  private reading = false;
  private ended = false;
  private lastSent = Date.now();
  private lastRenewed = Date.now();
  /** Armed while what was pushed waits for the client: it fires if the client takes nothing for `stallMs`. */
  private stall: NodeJS.Timeout | undefined;
  private first: string[] = [];
  private renew: (ms: number) => Promise<void> = () => Promise.resolve();

  constructor(
    readonly id: string,
    private readonly req: StreamRequest,
    private readonly readFeed: ReadCallFeed,
    private readonly s: CallStreamSettings,
    private readonly log: Logger,
    private readonly onClose: () => void,
  ) {
    // One read's worth is buffered at most: a client that does not read holds no more than that.
    super({ highWaterMark: 64 * 1024 });
    this.cursor = req.lastEventId;
  }

  /** The first read, without waiting: a cursor the feed refuses fails the request before any byte is sent. */
  async begin(renew: (ms: number) => Promise<void>): Promise<void> {
    this.renew = renew;
    const r = await this.poll(0);
    // `retry`: how long EventSource waits before it reconnects after the stream ends.
    this.first = ['retry: 2000\n: following calls\n\n', ...this.format(r)];
  }

  override _read(): void {
    // The client took what was waiting: it is reading.
    clearTimeout(this.stall);
    if (this.first.length > 0) {
      const chunks = this.first;
      this.first = [];
      this.send(chunks.join(''));
      return;
    }
    if (!this.reading && !this.ended) void this.fill();
  }

  /** Ends the stream now with a comment saying why (the gateway stops). */
  finish(): void {
    this.end(': the server is stopping; reconnect with Last-Event-ID\n\n');
  }

  override _destroy(err: Error | null, cb: (e?: Error | null) => void): void {
    clearTimeout(this.stall);
    this.ended = true;
    this.onClose();
    cb(err);
  }

  private end(last: string): void {
    if (this.ended) return;
    this.ended = true;
    clearTimeout(this.stall);
    this.push(last);
    this.push(null);
  }

  /** Pushes to the client, and starts counting how long it takes to take it. */
  private send(chunk: string): void {
    this.push(chunk);
    clearTimeout(this.stall);
    this.stall = setTimeout(() => this.stalled(), this.s.stallMs);
    this.stall.unref();
  }

  /** Reads until there is something to send: changes, or a keep-alive comment when idle for long. */
  private async fill(): Promise<void> {
    this.reading = true;
    try {
      while (!this.ended) {
        await this.renewLease();
        const untilKeepAlive = this.lastSent + this.s.keepAliveMs - Date.now();
        const waitMs = Math.max(0, Math.min(this.s.pollMs, untilKeepAlive));
        const asked = Date.now();
        const r = await this.poll(waitMs);
        if (this.ended) return;
        const chunks = this.format(r);
        if (chunks.length === 0 && Date.now() - this.lastSent >= this.s.keepAliveMs) chunks.push(': keep-alive\n\n');
        if (chunks.length > 0) {
          this.lastSent = Date.now();
          this.send(chunks.join(''));
          return;
        }
        // Nothing, and sooner than asked (a telephony replica that is stopping answers at once):
        // the next read waits a little, so a stream never spins against it.
        const early = waitMs - (Date.now() - asked);
        if (early > 0) await new Promise((r) => setTimeout(r, Math.min(early, QUIET_RETRY_MS)));
      }
    } catch (err) {
      // Telephony away for longer than the client's deadline: the stream ends, and the client
      // reconnects with its Last-Event-ID (EventSource does so by itself).
      this.log.warn(
        { err, stream: this.id },
        'a call stream could not read the feed; it ends so its client reconnects',
      );
      this.end(': the call feed is not answering; reconnect with Last-Event-ID\n\n');
    } finally {
      this.reading = false;
    }
  }

  private async poll(waitMs: number): Promise<voiceapi.telephony.v1.ReadCallFeedResponse> {
    const f = this.req.filter;
    const r = await this.readFeed(
      {
        after: this.cursor ?? '',
        limit: 200,
        waitMs,
        ...(f.direction && { direction: f.direction }),
        ...(f.campaignId && { campaignId: f.campaignId }),
        ...(f.agentId && { agentId: f.agentId }),
      },
      this.req.call,
      { timeoutMs: waitMs + 5_000 },
    );
    this.cursor = r.cursor;
    return r;
  }

  private format(r: voiceapi.telephony.v1.ReadCallFeedResponse): string[] {
    const out: string[] = [];
    if (r.reset)
      out.push(
        event(
          'stream.reset',
          { reason: 'the Last-Event-ID is older than the 24 hours the stream keeps; it goes on from now' },
          r.cursor,
        ),
      );
    // The call as GET /calls shows it; sandbox activity says so.
    for (const c of r.changes)
      out.push(event(c.change, { ...callJson(c.call), ...(c.call?.sandbox && { sandbox: true }) }, c.cursor));
    return out;
  }

  private async renewLease(): Promise<void> {
    if (Date.now() - this.lastRenewed < this.s.leaseMs / 3) return;
    this.lastRenewed = Date.now();
    await this.renew(this.s.leaseMs).catch((err: unknown) =>
      this.log.warn({ err, stream: this.id }, "a stream's lease could not be renewed; tried again later"),
    );
  }

  /** A client that took nothing for `stallMs` while the stream had something for it is dropped. */
  private stalled(): void {
    if (this.ended) return;
    this.log.info({ stream: this.id }, 'a call stream client read nothing for too long; dropped');
    this.end(
      event('stream.dropped', {
        reason: 'the client read nothing for too long; reconnect with Last-Event-ID to go on',
      }),
    );
    // The last event waits for a client that starts reading again within as long; one that never
    // does loses the connection, and nothing more is kept for it.
    setTimeout(() => this.destroy(), this.s.stallMs).unref();
  }
}
