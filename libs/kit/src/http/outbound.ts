// Over 300 lines because the SSRF checks, the exchange and whose failure it was (direct or proxied) are read together.
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import ipaddr from 'ipaddr.js';
import { Agent, Pool, ProxyAgent, request, type Dispatcher } from 'undici';

/**
 * The only HTTP client for tenant-given URLs (custom API, webhooks). Against SSRF it refuses non-https
 * (except allow-listed `host:port`s), URL credentials, and hosts resolving to any non-public-unicast address,
 * checked on every request and redirect and connected to as checked (no rebinding). Size and time capped. Through an
 * egress proxy (`OutboundPolicy.proxy`) the same checks are made, and the proxy connects (decision 0157).
 */

/** A URL refused before anything was sent. */
export class OutboundRefused extends Error {
  constructor(
    readonly reason: 'scheme' | 'credentials' | 'address' | 'malformed' | 'redirects',
    message: string,
  ) {
    super(message);
    this.name = 'OutboundRefused';
  }
}

/**
 * A permitted exchange that failed. `side`, as far as the error tells: `near` when this host could not send at all
 * (its resolver did not answer, it has no route out, it ran out of sockets or buffers, its egress proxy failed or
 * refused the tunnel), the sender's own failure; `far` otherwise (the name does not exist, the host refused, reset or
 * did not answer in time, the proxy could not reach it, the answer was too large), the destination's.
 */
export class OutboundFailed extends Error {
  constructor(
    readonly reason: 'timeout' | 'too_large' | 'unreachable' | 'network',
    message: string,
    readonly side: 'near' | 'far' = 'far',
  ) {
    super(message);
    this.name = 'OutboundFailed';
  }
}

export interface OutboundPolicy {
  /** `host:port`s reachable though not public, over http too: the operator's endpoints, tests (`OUTBOUND_ALLOWLIST`). */
  allow?: readonly string[];
  /**
   * An HTTP CONNECT proxy, `http://host:port` (Smokescreen's shape), that every exchange goes through, tunnelled, to
   * public and allow-listed hosts alike (`OUTBOUND_PROXY`). Unset or empty: direct. See `proxyFailureOf` for whose a
   * failure through it is.
   */
  proxy?: string;
  /** Largest response body read, in bytes (default 1 MiB). */
  maxResponseBytes?: number;
  /** Redirects followed, each checked like the first request (default 3). */
  maxRedirects?: number;
}

export interface OutboundRequest {
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  headers?: Record<string, string>;
  body?: string;
  /** The whole exchange, redirects and body included. */
  timeoutMs: number;
  /** `return`: a 3xx is the answer, nothing followed (webhook deliveries treat it as a failure). Default `follow`. */
  redirects?: 'follow' | 'return';
  /** `truncate`: a body over the cap is cut there, not an error (when only the status matters). Default `fail`. */
  oversize?: 'fail' | 'truncate';
}

export interface OutboundResponse {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
  /** The URL that answered (after redirects). */
  url: string;
}

const DEFAULT_MAX_BYTES = 1024 * 1024;
/**
 * System errors that say this host could not send, whatever the destination: its resolver did not answer
 * (`EAI_AGAIN`, `EAI_FAIL`; a name that does not exist is `ENOTFOUND`, the destination's), no route out, no local
 * address, no sockets or buffers left.
 */
const NEAR_SIDE_CODES = new Set('EAI_AGAIN EAI_FAIL ENETUNREACH EADDRNOTAVAIL EMFILE ENFILE ENOBUFS ENOMEM'.split(' '));
/** Codes of a host that could not be reached (whichever side's the failure was). */
const UNREACHABLE_CODES = new Set('ENOTFOUND EAI_AGAIN ECONNREFUSED EHOSTUNREACH ENETUNREACH'.split(' '));
const DEFAULT_MAX_REDIRECTS = 3;
/**
 * The longest the proxy may leave a CONNECT unanswered. An exchange gives up at its own deadline; the tunnel it asked
 * for (undici does not withdraw it) holds a socket to the proxy until the proxy answers or this passes.
 */
const TUNNEL_ANSWER_MS = 60_000;

export class OutboundClient {
  private readonly allow: Set<string>;
  private readonly maxBytes: number;
  private readonly maxRedirects: number;
  private readonly agents: { public: Dispatcher; allowListed: Dispatcher };
  private readonly proxied: boolean;

  constructor(policy: OutboundPolicy = {}) {
    this.allow = new Set((policy.allow ?? []).map(allowEntry));
    this.maxBytes = policy.maxResponseBytes ?? DEFAULT_MAX_BYTES;
    this.maxRedirects = policy.maxRedirects ?? DEFAULT_MAX_REDIRECTS;
    const proxy = policy.proxy?.trim() ? proxyOrigin(policy.proxy) : undefined;
    this.proxied = proxy !== undefined;
    if (proxy) {
      // Tunnelled for http: targets too (undici 8 would otherwise forward them as absolute-form requests).
      const viaProxy = new ProxyAgent({
        uri: proxy,
        proxyTunnel: true,
        clientFactory: (origin, opts) =>
          new ProxyLeg(origin, { ...(opts as Pool.Options), headersTimeout: TUNNEL_ANSWER_MS }),
      });
      this.agents = { public: viaProxy, allowListed: viaProxy };
    } else {
      // The connection resolves through the check: what it connects to is what was checked.
      this.agents = { public: new Agent({ connect: { lookup: checkedLookup } }), allowListed: new Agent() };
    }
  }

  /** Checks a URL's form without resolving it (when a tenant saves one); names are checked when called. */
  checkUrl(raw: string): URL {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw new OutboundRefused('malformed', 'not an absolute URL');
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:')
      throw new OutboundRefused('scheme', `${url.protocol} URLs are not allowed; use https:`);
    if (url.username || url.password)
      throw new OutboundRefused(
        'credentials',
        'credentials in the URL are not allowed; the platform sends the secret as a bearer token',
      );
    if (this.allowListed(url)) return url;
    const literal = literalAddress(url.hostname);
    if (literal && !isPublic(literal)) throw new OutboundRefused('address', `${url.hostname} is not a public address`);
    if (url.protocol === 'http:') throw new OutboundRefused('scheme', 'http: is not allowed; use https:');
    return url;
  }

  async send(raw: string, req: OutboundRequest): Promise<OutboundResponse> {
    // Not `AbortSignal.timeout`: it would keep the exchange's objects alive for the whole timeout.
    const deadline = new AbortController();
    const timer = setTimeout(
      () => deadline.abort(new DOMException(`no complete answer within ${req.timeoutMs} ms`, 'TimeoutError')),
      req.timeoutMs,
    );
    try {
      return await this.sendUntil(raw, req, deadline.signal);
    } finally {
      clearTimeout(timer);
    }
  }

  private async sendUntil(raw: string, req: OutboundRequest, signal: AbortSignal): Promise<OutboundResponse> {
    let url = this.checkUrl(raw);
    let method = req.method ?? 'GET';
    let body = req.body;
    for (let hop = 0; ; hop++) {
      const res = await this.exchange(url, {
        method,
        body,
        headers: req.headers ?? {},
        signal,
        timeoutMs: req.timeoutMs,
      });
      const location =
        res.statusCode >= 300 && res.statusCode < 400 && req.redirects !== 'return'
          ? header(res.headers, 'location')
          : undefined;
      if (location === undefined)
        return {
          status: res.statusCode,
          headers: flatHeaders(res.headers),
          body: await this.readCapped(res.body, signal, req),
          url: url.toString(),
        };
      await res.body.dump().catch(() => undefined); // a failed drain costs only the connection
      if (hop >= this.maxRedirects) throw new OutboundRefused('redirects', `more than ${this.maxRedirects} redirects`);
      const next = this.checkUrl(new URL(location, url).toString());
      // Credentials go to the origin they were given for only.
      if (next.origin !== url.origin) req = { ...req, headers: withoutAuthorization(req.headers) };
      // 303 (and 301/302 after a POST, as browsers do) continue as GET without the body.
      if (res.statusCode === 303 || ((res.statusCode === 301 || res.statusCode === 302) && method === 'POST')) {
        method = 'GET';
        body = undefined;
      }
      url = next;
    }
  }

  async close(): Promise<void> {
    await Promise.all([...new Set([this.agents.public, this.agents.allowListed])].map((a) => a.close()));
  }

  private async exchange(
    url: URL,
    r: {
      method: string;
      body: string | undefined;
      headers: Record<string, string>;
      signal: AbortSignal;
      timeoutMs: number;
    },
  ): Promise<Dispatcher.ResponseData> {
    try {
      const allowListed = this.allowListed(url);
      // Through the proxy the name is resolved again there, so this check is not pinned to the connection: defense in
      // depth beside the proxy's own policy (a literal address was checked by `checkUrl`).
      if (this.proxied && !allowListed && !literalAddress(url.hostname))
        await beforeDeadline(resolvedPublic(url.hostname), r.signal);
      const dispatcher = allowListed ? this.agents.allowListed : this.agents.public;
      const answer = request(url, { dispatcher, method: r.method, headers: r.headers, body: r.body, signal: r.signal });
      return await beforeDeadline(answer, r.signal, (late) => late.body.destroy());
    } catch (err) {
      throw (this.proxied ? proxyFailureOf : failureOf)(err, r.timeoutMs);
    }
  }

  private async readCapped(
    body: Dispatcher.ResponseData['body'],
    signal: AbortSignal,
    req: OutboundRequest,
  ): Promise<Buffer> {
    const { timeoutMs } = req;
    const chunks: Buffer[] = [];
    let size = 0;
    try {
      for await (const chunk of body) {
        size += (chunk as Buffer).length;
        if (size > this.maxBytes) {
          body.destroy();
          if (req.oversize === 'truncate') {
            chunks.push((chunk as Buffer).subarray(0, (chunk as Buffer).length - (size - this.maxBytes)));
            return Buffer.concat(chunks);
          }
          throw new OutboundFailed('too_large', `the response is larger than ${this.maxBytes} bytes`);
        }
        chunks.push(chunk as Buffer);
      }
    } catch (err) {
      throw failureOf(err, timeoutMs);
    }
    if (signal.aborted) throw new OutboundFailed('timeout', `no complete answer within ${timeoutMs} ms`);
    return Buffer.concat(chunks);
  }

  private allowListed(url: URL): boolean {
    return this.allow.has(`${url.hostname}:${url.port || (url.protocol === 'https:' ? '443' : '80')}`);
  }
}

/** What a failed exchange (undici's error, or one of ours) tells: refused, or failed with a reason and a side. */
export function failureOf(err: unknown, timeoutMs: number): Error {
  if (err instanceof OutboundRefused || err instanceof OutboundFailed) return err;
  const cause = (err as { cause?: unknown })?.cause;
  if (cause instanceof OutboundRefused) return cause;
  const name = (err as { name?: string })?.name;
  if (name === 'TimeoutError' || name === 'AbortError')
    return new OutboundFailed('timeout', `no complete answer within ${timeoutMs} ms`);
  const code = (err as { code?: string })?.code ?? (cause as { code?: string } | undefined)?.code;
  const side = code !== undefined && NEAR_SIDE_CODES.has(code) ? 'near' : 'far';
  if (code !== undefined && UNREACHABLE_CODES.has(code))
    return new OutboundFailed('unreachable', `the host could not be reached (${code})`, side);
  return new OutboundFailed('network', `the exchange failed (${code ?? name ?? 'error'})`, side);
}

/**
 * The proxy leg's failure to open a tunnel: `status` is the proxy's answer to the CONNECT, absent when none came (the
 * cause says why: refused, reset, closed, not answered in time). No undici `code`: its client would take
 * `UND_ERR_SOCKET` for a failure worth connecting again.
 */
class TunnelFailed extends Error {
  constructor(
    readonly status: number | undefined,
    cause?: unknown,
  ) {
    super(status === undefined ? 'the egress proxy opened no tunnel' : `the egress proxy answered ${status}`, {
      cause,
    });
    this.name = 'TunnelFailed';
  }
}

type TunnelRequest = Parameters<Pool['connect']>[0];
type TunnelCallback = (err: Error | null, data: Dispatcher.ConnectData) => void;

/**
 * The connection to the egress proxy, over which undici's ProxyAgent asks for each tunnel (`connect`, HTTP CONNECT):
 * what fails there, or is answered with anything but 200, is the proxy's, told by `TunnelFailed`. Everything after
 * the tunnel is open is the destination's. (undici's own errors do not tell them apart: the proxy resetting the
 * CONNECT and the destination resetting the open tunnel are the same `ECONNRESET`, and its non-200 answer is an
 * `AbortError` with the status in the message only.)
 */
class ProxyLeg extends Pool {
  override connect(options: TunnelRequest): Promise<Dispatcher.ConnectData>;
  override connect(options: TunnelRequest, callback: TunnelCallback): void;
  override connect(options: TunnelRequest, callback?: TunnelCallback): Promise<Dispatcher.ConnectData> | void {
    const tunnel = super.connect(options).then(
      (answer) => {
        if (answer.statusCode === 200) return answer;
        answer.socket.on('error', () => undefined).destroy();
        throw new TunnelFailed(answer.statusCode);
      },
      (err: unknown) => {
        throw new TunnelFailed(undefined, err);
      },
    );
    if (!callback) return tunnel;
    tunnel.then(
      (answer) => callback(null, answer),
      (err: Error) => callback(err, undefined as never),
    );
  }
}

/**
 * What a failed exchange through the egress proxy tells. The proxy not opening the tunnel is our egress failing
 * (`near`): it could not be reached, it reset or closed the connection without an answer, or it answered the CONNECT
 * with 407 (Smokescreen's answer when its policy refuses) or any status but three: 502, 503 and 504 say it could not
 * reach the destination (`far`, `unreachable`). Once the tunnel is open, failures are as `failureOf` tells them.
 * An exchange that times out stays the destination's even when its tunnel was never opened: undici does not say, per
 * exchange, whether it was; and a Smokescreen-style proxy answers the CONNECT only once it has connected to the
 * destination, so an unanswered CONNECT is as often the destination not answering (the proxy's own connect timeout
 * is a 504). A CONNECT unanswered for `TUNNEL_ANSWER_MS`, before the exchange's deadline, is the proxy's.
 */
function proxyFailureOf(err: unknown, timeoutMs: number): Error {
  if (!(err instanceof TunnelFailed)) return failureOf(err, timeoutMs);
  const { status } = err;
  if (status === 502 || status === 503 || status === 504)
    return new OutboundFailed('unreachable', `the host could not be reached (the egress proxy answered ${status})`);
  if (status !== undefined)
    return new OutboundFailed('network', `the egress proxy refused the tunnel (it answered ${status})`, 'near');
  const code = (err.cause as { code?: string } | undefined)?.code ?? (err.cause as Error | undefined)?.name ?? 'error';
  return UNREACHABLE_CODES.has(code)
    ? new OutboundFailed('unreachable', `the egress proxy could not be reached (${code})`, 'near')
    : new OutboundFailed('network', `the egress proxy opened no tunnel (${code})`, 'near');
}

/**
 * `work`, or the deadline's reason once it passes first. undici honours an abort only once the request has a
 * connection: one still waiting for it (a tunnel the proxy has not answered, a connect that hangs) would outlive the
 * deadline. What settles late is dropped.
 */
function beforeDeadline<T>(
  work: Promise<T>,
  signal: AbortSignal,
  drop: (late: T) => void = () => undefined,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const late = () => {
      reject(signal.reason as Error);
      work.then(drop, () => undefined);
    };
    if (signal.aborted) return late();
    signal.addEventListener('abort', late, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', late);
        resolve(value);
      },
      (err: Error) => {
        signal.removeEventListener('abort', late);
        reject(err);
      },
    );
  });
}

/** The proxy setting as undici takes it (`http://host:port`), or a clear error naming the setting. */
function proxyOrigin(raw: string): string {
  const setting = `the outbound proxy (OUTBOUND_PROXY) ${JSON.stringify(raw)}`;
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw new Error(`${setting} is not a URL; give http://host:port (an HTTP CONNECT proxy)`);
  }
  if (url.protocol !== 'http:')
    throw new Error(`${setting} is not http:; give http://host:port (the tunnel carries TLS to the destination)`);
  if (!url.hostname || url.username || url.password || url.pathname !== '/' || url.search || url.hash)
    throw new Error(`${setting} is not http://host:port (no credentials, path or query)`);
  return url.origin;
}

/** Resolves a name as the direct connection would, refusing it unless every address is public (`checkedLookup`). */
function resolvedPublic(hostname: string): Promise<void> {
  return new Promise((resolve, reject) =>
    checkedLookup(hostname, { all: true }, (err) => (err ? reject(err) : resolve())),
  );
}

/** An allow-list entry as URLs are matched (`host:port`, host as the URL parser writes it). */
function allowEntry(entry: string): string {
  // The port is read here: the URL parser drops a scheme's default port (`host:80` → `host`).
  const m = /^(.+):(\d{1,5})$/.exec(entry.trim());
  let host: string | undefined;
  try {
    const url = m ? new URL(`http://${m[1]}/`) : undefined;
    host = url && url.pathname === '/' && !url.username && !url.port ? url.hostname : undefined;
  } catch {
    host = undefined;
  }
  const port = Number(m?.[2]);
  if (!host || !(port >= 1 && port <= 65_535))
    throw new Error(`outbound allow-list entry ${JSON.stringify(entry)} is not host:port (e.g. 127.0.0.1:8443)`);
  return `${host}:${port}`;
}

/** Public unicast only: not private, loopback, link-local (metadata), CGNAT, reserved, 6to4/Teredo/NAT64… */
function isPublic(addr: ipaddr.IPv4 | ipaddr.IPv6): boolean {
  return addr.range() === 'unicast';
}

/** dns.lookup, refusing a name unless every address it resolves to is public. */
function checkedLookup(
  hostname: string,
  options: LookupOptions,
  callback: (err: Error | null, address: string | LookupAddress[], family?: number) => void,
): void {
  dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return callback(err, []);
    if (addresses.length === 0 || addresses.some((a) => !isPublic(ipaddr.process(a.address)))) {
      return callback(new OutboundRefused('address', `${hostname} resolves to an address that is not allowed`), []);
    }
    if (options.all) return callback(null, addresses);
    callback(null, addresses[0]!.address, addresses[0]!.family);
  });
}

/** The address a URL's host names literally (IPv4-mapped IPv6 unwrapped), or null for a name. */
function literalAddress(hostname: string): ipaddr.IPv4 | ipaddr.IPv6 | null {
  const bare = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
  return ipaddr.isValid(bare) ? ipaddr.process(bare) : null;
}

function header(headers: Dispatcher.ResponseData['headers'], name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

function flatHeaders(headers: Dispatcher.ResponseData['headers']): Record<string, string> {
  return Object.fromEntries(
    Object.entries(headers).flatMap(([k, v]) => (v === undefined ? [] : [[k, Array.isArray(v) ? v.join(', ') : v]])),
  );
}

function withoutAuthorization(headers: Record<string, string> | undefined): Record<string, string> {
  return Object.fromEntries(Object.entries(headers ?? {}).filter(([k]) => k.toLowerCase() !== 'authorization'));
}
