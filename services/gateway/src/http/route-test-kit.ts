import type { AddressInfo } from 'node:net';
import { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import type { Logger } from '@voiceapi/kit/service';
import express from 'express';
import type { AuthenticatedKey } from '../auth/key-cache';
import { errorHandler, fail } from './errors';
import type { IdempotencyClaim, IdempotencyRecords, StoredResponse } from './idempotency';
import { localsOf, requestId } from './middleware';
import { mountRoutes } from './mount';
import { refusal } from './refusals';
import { buildDocument } from './openapi';
import type { RateLimiter } from './rate-limit';
import type { AnyRoute, Surface } from './route';

/**
 * For the route layer's unit specs: test-only routes mounted exactly as app.ts mounts the real
 * ones, served on a free port in-process. Authentication is stubbed (on the tenant surface a fixed
 * key per request, chosen by the `x-test-key` header; on the operator surface none, as after the
 * admin token); everything after it is the real route layer.
 */

export const PREFIX = '/api/v1';
export const ADMIN_PREFIX = '/admin/v1';

export const testKey = (over: Partial<AuthenticatedKey> = {}): AuthenticatedKey => ({
  keyId: 'key-1',
  tenantId: 'tenant-1',
  mode: 'live',
  scopes: new Set(['companies:read']),
  status: 'active',
  ...over,
});

export interface LogEntry {
  level: 'error' | 'warn';
  obj: unknown;
  msg: string | undefined;
}

export interface Served {
  url: string;
  logs: LogEntry[];
  document(): Record<string, any>;
  close(): Promise<void>;
}

export async function serve(
  routes: AnyRoute[],
  opts: {
    keys?: Record<string, AuthenticatedKey>;
    idempotency?: IdempotencyRecords;
    rateLimit?: RateLimiter;
    checkResponses?: boolean;
    bodyLimitBytes?: number;
    /** Which surface the routes are mounted on (default tenant). */
    surface?: Surface['kind'];
  } = {},
): Promise<Served> {
  const logs: LogEntry[] = [];
  const record = (level: LogEntry['level']) => (obj: unknown, msg?: string) => void logs.push({ level, obj, msg });
  const log = {
    error: record('error'),
    warn: record('warn'),
    info: () => undefined,
    debug: () => undefined,
  } as unknown as Logger;
  const keys = opts.keys ?? { default: testKey() };
  const kind = opts.surface ?? 'tenant';
  const prefix = kind === 'tenant' ? PREFIX : ADMIN_PREFIX;
  const registry = new OpenAPIRegistry();
  const surface: Surface = {
    kind,
    prefix,
    registry,
    bodyLimitBytes: opts.bodyLimitBytes ?? 1024,
    log,
    ...(opts.rateLimit && { rateLimit: opts.rateLimit }),
    ...(opts.idempotency && { idempotency: opts.idempotency }),
    ...(opts.checkResponses !== undefined && { checkResponses: opts.checkResponses }),
  };
  const app = express();
  app.set('query parser', 'simple');
  const api = express.Router();
  api.use(requestId);
  if (kind === 'tenant') {
    api.use((req, res, next) => {
      const auth = keys[req.get('x-test-key') ?? 'default'];
      if (!auth) return fail(res, 'unauthorized', 'invalid API key');
      localsOf(res).auth = auth;
      next();
    });
  }
  mountRoutes(api, surface, routes);
  api.use((_req, res) => fail(res, 'not_found', 'no such endpoint'));
  app.use(prefix, api);
  app.use(errorHandler(log));
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${prefix}`,
    logs,
    document: () =>
      buildDocument(registry, { title: 'test', version: '0.0.0', description: 'test' }) as Record<string, any>,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * Idempotency records in memory, with the semantics the real store has (and its integration test
 * checks): one claim per (tenant, mode, key), 409 while it runs, 422 for another request hash.
 */
export class MemoryIdempotency implements IdempotencyRecords {
  readonly records = new Map<string, { hash: string; response?: StoredResponse }>();
  failComplete = false;

  async claim(scope: { tenantId: string; mode: string; key: string }, hash: string): Promise<IdempotencyClaim> {
    const id = `${scope.tenantId}/${scope.mode}/${scope.key}`;
    const existing = this.records.get(id);
    if (!existing) {
      this.records.set(id, { hash });
      return { kind: 'claimed', id };
    }
    if (existing.hash !== hash)
      throw refusal('idempotency_key_reused', 'this Idempotency-Key was used with a different request body');
    if (existing.response)
      return { kind: 'replay', response: JSON.parse(JSON.stringify(existing.response)) as StoredResponse };
    throw refusal('idempotency_in_progress', 'a request with this Idempotency-Key is still in progress');
  }

  async complete(id: unknown, response: StoredResponse): Promise<void> {
    if (this.failComplete) throw new Error('database went away');
    this.records.get(id as string)!.response = response;
  }

  async release(id: unknown): Promise<void> {
    this.records.delete(id as string);
  }
}

/** A promise with its resolve function outside, to hold a handler until the test lets it go. */
export function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

export async function json(res: Response): Promise<{ status: number; headers: Headers; body: any }> {
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? (JSON.parse(text) as unknown) : undefined };
}
