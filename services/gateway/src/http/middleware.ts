import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import type { NextFunction, RequestHandler, Response } from 'express';
import { LRUCache } from 'lru-cache';
import type { AuthenticatedKey, KeyCache } from '../auth/key-cache';
import { hashKey, parseKey } from '../auth/key-format';
import { fail } from './errors';
import { FixedWindowLimiter } from './rate-limit';

export interface GatewayLocals {
  requestId: string;
  auth?: AuthenticatedKey;
}

export const localsOf = (res: Response): GatewayLocals => res.locals as GatewayLocals;

/** Middleware run in order as one Express layer (a router layer costs more than a call). */
export function inSequence(...handlers: RequestHandler[]): RequestHandler {
  return handlers.reduceRight<RequestHandler>(
    (rest, handler) => (req, res, next) =>
      handler(req, res, (err?: unknown) => (err ? next(err) : rest(req, res, next))),
    (_req, _res, next) => next(),
  );
}

/**
 * First on every API request: accepts a caller's X-Request-Id when it is sane, otherwise makes
 * one, and echoes it back. Every API answer is private to its caller (some show a key once) and
 * is JSON or a declared type, so none may be cached or content-sniffed.
 */
export const requestId: RequestHandler = (req, res, next) => {
  const given = req.get('x-request-id');
  const id = given && /^[\w.:-]{1,128}$/.test(given) ? given : randomUUID();
  localsOf(res).requestId = id;
  res.setHeader('X-Request-Id', id);
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('X-Content-Type-Options', 'nosniff');
  next();
};

/** How many times each credential header was sent (Node keeps only the first `Authorization`). */
function credentialHeaders(rawHeaders: string[]): { authorization: number; apiKey: number } {
  let authorization = 0;
  let apiKey = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!;
    if (name.length === 13 && name.toLowerCase() === 'authorization') authorization++;
    else if (name.length === 9 && name.toLowerCase() === 'x-api-key') apiKey++;
  }
  return { authorization, apiKey };
}

/** First check on every /api/v1 request: answered from memory, before the key is looked at. */
export const killSwitchGate =
  (isOn: () => boolean): RequestHandler =>
  (_req, res, next) => {
    if (isOn()) return fail(res, 'api_globally_disabled', 'the API is temporarily disabled by the platform operator');
    next();
  };

/** Query parameters a client might put a key in; their presence alone refuses the request. */
const KEY_QUERY_PARAMS = ['api_key', 'apiKey', 'key', 'access_token', 'token'];

/**
 * Reads the key from `Authorization: Bearer` or `X-API-Key`. A key in the query string is refused.
 * A cached key is answered synchronously: no promise, no extra turn of the event loop.
 */
export function authenticate(keys: KeyCache, pepper: string, onUse: (auth: AuthenticatedKey) => void): RequestHandler {
  const admit = (found: AuthenticatedKey | null, res: Response, next: NextFunction): void => {
    if (!found) return fail(res, 'unauthorized', 'invalid API key');
    if (found.status !== 'active') return fail(res, 'unauthorized', 'API key is not active');
    localsOf(res).auth = found;
    onUse(found);
    next();
  };
  // The last well-formed key on each connection and its HMAC: a keep-alive client sends the same
  // key every time, and the HMAC was 6 % of the CPU a ping costs. Only the hash → key lookup below
  // decides; the entry holds nothing the connection did not send, and goes with the connection.
  const lastKeyOn = new WeakMap<object, { key: string; hash: string }>();
  return (req, res, next) => {
    if (req.url.includes('?') && KEY_QUERY_PARAMS.some((k) => k in (req.query as object))) {
      return fail(
        res,
        'unauthorized',
        'API keys are accepted only in the Authorization or X-API-Key header, never in the URL',
      );
    }
    const sent = credentialHeaders(req.rawHeaders);
    if (sent.authorization + sent.apiKey > 1) {
      return fail(
        res,
        'unauthorized',
        'send exactly one credential: one Authorization or one X-API-Key header, not several',
      );
    }
    const header = req.get('authorization');
    let key: string | undefined;
    if (header !== undefined) {
      const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
      if (!m) return fail(res, 'unauthorized', 'Authorization header must be "Bearer <API key>"');
      key = m[1];
    } else {
      key = req.get('x-api-key')?.trim();
    }
    if (!key) return fail(res, 'unauthorized', 'missing API key: send Authorization: Bearer <key> or X-API-Key');
    let hash: string;
    const last = lastKeyOn.get(req.socket);
    if (last?.key === key) {
      hash = last.hash;
    } else {
      if (!parseKey(key)) return fail(res, 'unauthorized', 'invalid API key');
      hash = hashKey(key, pepper);
      lastKeyOn.set(req.socket, { key, hash });
    }
    const cached = keys.cached(hash);
    if (cached !== undefined) return admit(cached, res, next);
    keys.get(hash).then((found) => admit(found, res, next), next);
  };
}

/** Per-key fixed-window rate limit (decision 0021). */
export const perKeyRateLimit = (defaultPerSecond: number): FixedWindowLimiter =>
  new FixedWindowLimiter(defaultPerSecond);

const digest = (s: string) => createHash('sha256').update(s).digest();

export interface AdminThrottle {
  /** Wrong tokens a client address may send per window before it is refused (default 10). */
  maxFailures?: number;
  /** The window, from the address's first failure (default 60 s). */
  windowMs?: number;
  now?: () => number;
}

/** Addresses remembered at most; past it, expired windows are dropped, then the one whose window opened longest ago. */
const MAX_TRACKED_ADDRESSES = 10_000;

/**
 * Operator API: constant-time comparison of the bearer token. A client address that sent
 * `maxFailures` wrong (or malformed, or repeated) tokens within the window is refused with 429 `rate_limited` and
 * `Retry-After` until the window ends — the right token included, so guessing learns nothing
 * meanwhile. The address is the socket's peer (no proxy headers are trusted).
 */
export function requireAdmin(token: string, throttle: AdminThrottle = {}): RequestHandler {
  const expected = digest(token);
  const maxFailures = throttle.maxFailures ?? 10;
  const windowMs = throttle.windowMs ?? 60_000;
  const now = throttle.now ?? Date.now;
  // Read with `peek`: an address's place is when its window opened, not when it was last looked at.
  const failures = new LRUCache<string, { count: number; resetAt: number }>({ max: MAX_TRACKED_ADDRESSES });
  const refuse = (res: Response, address: string, message: string): void => {
    const t = now();
    let entry = failures.peek(address);
    if (!entry || entry.resetAt <= t) {
      // Full: expired windows go first; if none has expired, the set below forgets the window opened longest ago.
      if (failures.size >= MAX_TRACKED_ADDRESSES)
        for (const [a, e] of [...failures.entries()]) if (e.resetAt <= t) failures.delete(a);
      entry = { count: 0, resetAt: t + windowMs };
      failures.set(address, entry);
    }
    entry.count++;
    fail(res, 'unauthorized', message);
  };
  return (req, res, next) => {
    const address = req.socket.remoteAddress ?? 'unknown';
    const entry = failures.peek(address);
    if (entry && entry.count >= maxFailures) {
      const left = entry.resetAt - now();
      if (left > 0) {
        res.setHeader('Retry-After', Math.max(1, Math.ceil(left / 1_000)));
        return fail(
          res,
          'rate_limited',
          'too many wrong operator tokens from this address; retry after the Retry-After interval',
        );
      }
      failures.delete(address);
    }
    if (credentialHeaders(req.rawHeaders).authorization > 1)
      return refuse(res, address, 'send the operator token once');
    const header = req.get('authorization');
    // No credential at all is not a guess: answered, not counted.
    if (header === undefined)
      return fail(res, 'unauthorized', 'missing operator token: send Authorization: Bearer <token>');
    const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!m || !timingSafeEqual(digest(m[1]!), expected)) return refuse(res, address, 'missing or wrong operator token');
    next();
  };
}
