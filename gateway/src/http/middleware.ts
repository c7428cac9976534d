import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import type { RequestHandler, Response } from 'express';
import { rateLimit } from 'express-rate-limit';
import type { AuthenticatedKey, KeyCache } from '../auth/key-cache';
import { hashKey, parseKey } from '../auth/key-format';
import type { Scope } from '../auth/scopes';
import { fail } from './errors';
import { SnapshotMemoryStore } from './rate-limit-store';

export interface GatewayLocals {
  requestId: string;
  auth?: AuthenticatedKey;
}

export const localsOf = (res: Response): GatewayLocals => res.locals as GatewayLocals;

export function authOf(res: Response): AuthenticatedKey {
  const auth = localsOf(res).auth;
  if (!auth) throw new Error('route reached without authentication');
  return auth;
}

/** Accepts a caller's X-Request-Id when it is sane, otherwise makes one; echoes it back. */
export const requestId: RequestHandler = (req, res, next) => {
  const given = req.get('x-request-id');
  const id = given && /^[\w.:-]{1,128}$/.test(given) ? given : randomUUID();
  localsOf(res).requestId = id;
  res.setHeader('X-Request-Id', id);
  next();
};

/** First check on every /api/v1 request: answered from memory, before the key is looked at. */
export const killSwitchGate =
  (isOn: () => boolean): RequestHandler =>
  (_req, res, next) => {
    if (isOn()) return fail(res, 'api_globally_disabled', 'the API is temporarily disabled by the platform operator');
    next();
  };

/** Query parameters a client might put a key in; their presence alone refuses the request. */
const KEY_QUERY_PARAMS = ['api_key', 'apiKey', 'key', 'access_token', 'token'];

/** Reads the key from `Authorization: Bearer` or `X-API-Key`. A key in the query string is refused. */
export function authenticate(keys: KeyCache, pepper: string, onUse: (auth: AuthenticatedKey) => void): RequestHandler {
  return async (req, res, next) => {
    if (req.url.includes('?') && KEY_QUERY_PARAMS.some((k) => k in (req.query as object))) {
      return fail(res, 'unauthorized', 'API keys are accepted only in the Authorization or X-API-Key header, never in the URL');
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
    if (!parseKey(key)) return fail(res, 'unauthorized', 'invalid API key');
    const found = await keys.get(hashKey(key, pepper));
    if (!found) return fail(res, 'unauthorized', 'invalid API key');
    if (found.status !== 'active') return fail(res, 'unauthorized', 'API key is not active');
    localsOf(res).auth = found;
    onUse(found);
    next();
  };
}

export const requireScopes =
  (required: readonly Scope[]): RequestHandler =>
  (_req, res, next) => {
    const auth = authOf(res);
    const missing = required.filter((s) => !auth.scopes.has(s));
    if (missing.length) return fail(res, 'forbidden', `API key lacks required scope: ${missing.join(', ')}`, { missing });
    next();
  };

/**
 * Per-key limit over a one-second window, with `RateLimit-*` and `Retry-After` headers. Counters
 * live in each replica's memory (see docs/decisions/0005-rate-limiting.md and rate-limit-store.ts).
 */
export function perKeyRateLimit(defaultPerSecond: number): RequestHandler {
  return rateLimit({
    windowMs: 1_000,
    store: new SnapshotMemoryStore(),
    limit: (_req, res) => localsOf(res).auth?.rateLimitPerSecond ?? defaultPerSecond,
    keyGenerator: (_req, res) => localsOf(res).auth?.keyId ?? 'anonymous',
    standardHeaders: 'draft-6',
    legacyHeaders: false,
    validate: false,
    handler: (_req, res) => {
      if (!res.getHeader('Retry-After')) res.setHeader('Retry-After', '1');
      fail(res, 'rate_limited', 'rate limit exceeded for this API key; retry after the Retry-After interval');
    },
  });
}

const digest = (s: string) => createHash('sha256').update(s).digest();

/** Operator API: constant-time comparison of the bearer token. */
export function requireAdmin(token: string): RequestHandler {
  const expected = digest(token);
  return (req, res, next) => {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(req.get('authorization') ?? '');
    if (!m || !timingSafeEqual(digest(m[1]!), expected)) return fail(res, 'unauthorized', 'missing or wrong operator token');
    next();
  };
}
