import { createHash } from 'node:crypto';
import type { OpenAPIRegistry, RouteConfig } from '@asteasolutions/zod-to-openapi';
import type { CallContext, Logger } from '@voiceapi/kit';
import express, { type RequestHandler, type Router } from 'express';
import type { AuthenticatedKey } from '../auth/key-cache';
import type { Scope } from '../auth/scopes';
import type { IdempotencyStore } from '../store/idempotency';
import { ErrorBody, errorResult, fail, send, type HttpResult } from './errors';
import { localsOf, requireScopes } from './middleware';
import { z } from './zod';

type AnyZod = z.ZodType;
type Infer<S> = S extends AnyZod ? z.infer<S> : undefined;

export interface RouteContext {
  requestId: string;
  /** The caller's key on tenant routes; undefined on operator routes. */
  auth: AuthenticatedKey | undefined;
  /** Metadata for the gRPC call to the owning service. */
  call: CallContext;
}

export interface RouteDef<P extends AnyZod | undefined, Q extends AnyZod | undefined, B extends AnyZod | undefined> {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  /** OpenAPI-style path relative to the surface's prefix, e.g. `/companies/{id}`. */
  path: string;
  summary: string;
  tag: string;
  description?: string;
  /** Tenant routes: scopes the key must hold (none: any valid key). */
  scopes?: Scope[];
  params?: P;
  query?: Q;
  body?: B;
  responses: Record<number, { description: string; schema?: AnyZod }>;
  /** Extra documented errors beyond the ones every route can answer. */
  errors?: Record<number, string>;
  handler: (input: { params: Infer<P>; query: Infer<Q>; body: Infer<B> }, ctx: RouteContext) => Promise<HttpResult>;
}

// Erases the generic parameters so routes of different shapes can sit in one list.
export type AnyRoute = RouteDef<AnyZod | undefined, AnyZod | undefined, AnyZod | undefined>;

export const defineRoute = <P extends AnyZod | undefined = undefined, Q extends AnyZod | undefined = undefined, B extends AnyZod | undefined = undefined>(
  def: RouteDef<P, Q, B>,
): AnyRoute => def as unknown as AnyRoute;

export interface Surface {
  kind: 'tenant' | 'admin';
  /** URL prefix the router is mounted under, e.g. `/api/v1`. */
  prefix: string;
  registry: OpenAPIRegistry;
  /** Per-key rate limit, applied after the scope check (tenant surface only). */
  rateLimit?: RequestHandler;
  idempotency?: IdempotencyStore;
  bodyLimitBytes: number;
  log: Logger;
}

const IDEMPOTENCY_HEADER = 'idempotency-key';
/** 1–255 visible ASCII characters. */
const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

/** Mounts each route on the router and documents it, from one definition. */
export function mountRoutes(router: Router, surface: Surface, routes: AnyRoute[]): void {
  const json = express.json({ limit: surface.bodyLimitBytes, strict: true, type: () => true });
  for (const route of routes) {
    document(surface, route);
    const chain: RequestHandler[] = [];
    if (surface.kind === 'tenant' && route.scopes?.length) chain.push(requireScopes(route.scopes));
    if (surface.rateLimit) chain.push(surface.rateLimit);
    if (route.body) chain.push(requireJson, json);
    chain.push(run(surface, route));
    router[route.method](expressPath(route.path), ...chain);
  }
  // A known path with a method it does not have: 405 naming the allowed ones, not 404.
  const methods = new Map<string, Set<string>>();
  for (const r of routes) methods.set(r.path, (methods.get(r.path) ?? new Set()).add(r.method.toUpperCase()));
  for (const [path, allowed] of methods) {
    const allow = [...allowed, ...(allowed.has('GET') ? ['HEAD'] : [])].join(', ');
    router.all(expressPath(path), (_req, res) => {
      res.setHeader('Allow', allow);
      fail(res, 'method_not_allowed', `method not allowed here; allowed: ${allow}`);
    });
  }
}

const expressPath = (openApiPath: string) => openApiPath.replace(/\{(\w+)\}/g, ':$1');

/** A body must be declared as JSON; an empty body is left for validation to report. */
const requireJson: RequestHandler = (req, res, next) => {
  const hasBody = Number(req.get('content-length') ?? 0) > 0 || req.get('transfer-encoding') !== undefined;
  if (hasBody && !req.is('application/json')) {
    return fail(res, 'unsupported_media_type', 'request body must be JSON with Content-Type: application/json');
  }
  next();
};

function run(surface: Surface, route: AnyRoute): RequestHandler {
  return async (req, res) => {
    const locals = localsOf(res);
    const ctx: RouteContext = {
      requestId: locals.requestId,
      auth: locals.auth,
      call: locals.auth
        ? { tenantId: locals.auth.tenantId, keyId: locals.auth.keyId, keyMode: locals.auth.mode, requestId: locals.requestId }
        : { requestId: locals.requestId },
    };
    const input = {
      params: parse(route.params, req.params, 'path'),
      query: parse(route.query, req.query, 'query'),
      body: route.body ? parse(route.body, req.body ?? undefined, 'body') : undefined,
    };
    const invalid = [input.params, input.query, input.body].find((r): r is Invalid => r instanceof Invalid);
    if (invalid) return fail(res, 'validation_error', invalid.message, { details: invalid.details });

    const exec = async (): Promise<HttpResult> => {
      try {
        return await route.handler(input as never, ctx);
      } catch (err) {
        return errorResult(err, surface.log, ctx.requestId);
      }
    };

    const idemKey = req.get(IDEMPOTENCY_HEADER);
    if (route.method !== 'post' || idemKey === undefined || !surface.idempotency || !ctx.auth) {
      return send(res, await exec());
    }
    if (!IDEMPOTENCY_KEY.test(idemKey)) {
      return fail(res, 'validation_error', 'Idempotency-Key must be 1–255 visible ASCII characters', {
        details: [{ path: 'header.Idempotency-Key', message: 'invalid' }],
      });
    }
    const store = surface.idempotency;
    const hash = requestHash(req.method, req.originalUrl, input.body);
    let claim;
    try {
      claim = await store.claim({ tenantId: ctx.auth.tenantId, mode: ctx.auth.mode, key: idemKey }, hash);
    } catch (err) {
      return send(res, errorResult(err, surface.log, ctx.requestId));
    }
    if (claim.kind === 'replay') {
      res.setHeader('Idempotent-Replayed', 'true');
      return send(res, claim.response);
    }
    const result = await exec();
    // Answers the service gave are kept for replay; our own failures (5xx) free the key for a retry.
    // Failing to record the answer must not hide it: the write happened, so the caller gets it.
    try {
      if (result.status < 500) await store.complete(claim.id, { status: result.status, body: result.body });
      else await store.release(claim.id);
    } catch (err) {
      surface.log.warn({ err, requestId: ctx.requestId }, 'could not record the idempotent answer');
    }
    send(res, result);
  };
}

class Invalid {
  constructor(
    readonly message: string,
    readonly details: { path: string; message: string }[],
  ) {}
}

function parse(schema: AnyZod | undefined, value: unknown, where: 'path' | 'query' | 'body'): unknown {
  if (!schema) return undefined;
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const details = r.error.issues.map((i) => ({ path: [where, ...i.path.map(String)].join('.'), message: i.message }));
  const first = details[0];
  return new Invalid(first ? `invalid ${where}: ${first.path} ${first.message}` : `invalid ${where}`, details);
}

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.keys(value as object)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

const requestHash = (method: string, url: string, body: unknown) =>
  createHash('sha256').update(`${method} ${url}\n${canonical(body)}`).digest('hex');

const COMMON_ERRORS: Record<'tenant' | 'admin', Record<number, string>> = {
  tenant: {
    400: 'Invalid request (`validation_error`, with `details`)',
    401: 'Missing, malformed, unknown or inactive key (`unauthorized`)',
    429: 'Rate limit exceeded (`rate_limited`); see `Retry-After` and `RateLimit-*` headers',
    500: 'Unexpected failure (`internal_error`)',
    503: 'Kill switch on (`api_globally_disabled`) or a service is down (`service_unavailable`)',
    504: 'A backing service did not answer in time (`upstream_timeout`)',
  },
  admin: {
    400: 'Invalid request (`validation_error`, with `details`)',
    401: 'Missing or wrong operator token (`unauthorized`)',
    500: 'Unexpected failure (`internal_error`)',
  },
};

function document(surface: Surface, route: AnyRoute): void {
  const errors: Record<number, string> = { ...COMMON_ERRORS[surface.kind], ...route.errors };
  if (route.scopes?.length) errors[403] = `Key lacks scope ${route.scopes.map((s) => `\`${s}\``).join(', ')} (\`forbidden\`, \`missing\` names it)`;
  if (route.body) {
    errors[413] = 'Body over the size limit (`payload_too_large`)';
    errors[415] = 'Body is not JSON (`unsupported_media_type`)';
  }
  const idempotent = surface.kind === 'tenant' && route.method === 'post';
  if (idempotent) {
    errors[409] ??= 'A request with this Idempotency-Key is still running (`idempotency_in_progress`)';
    errors[422] ??= 'This Idempotency-Key was used with another body (`idempotency_key_reused`)';
  }
  const responses: RouteConfig['responses'] = {};
  for (const [status, r] of Object.entries(route.responses)) {
    responses[status] = r.schema
      ? { description: r.description, content: { 'application/json': { schema: r.schema } } }
      : { description: r.description };
  }
  for (const [status, description] of Object.entries(errors)) {
    responses[status] ??= { description, content: { 'application/json': { schema: ErrorBody } } };
  }
  const request: RouteConfig['request'] = {};
  if (route.params) request.params = route.params as never;
  if (route.query) request.query = route.query as never;
  if (route.body) request.body = { required: true, content: { 'application/json': { schema: route.body } } };
  if (idempotent) {
    request.headers = z.object({
      'Idempotency-Key': z.string().regex(IDEMPOTENCY_KEY).optional().openapi({
        description: 'Makes a retry safe: same key and body within 24 h replays the first answer (`Idempotent-Replayed: true`)',
      }),
    });
  }
  const scopeNote = surface.kind === 'tenant' ? `\n\nScope: ${route.scopes?.length ? route.scopes.map((s) => `\`${s}\``).join(', ') : 'none (any valid key)'}.` : '';
  surface.registry.registerPath({
    method: route.method,
    path: surface.prefix + route.path,
    summary: route.summary,
    description: (route.description ?? '') + scopeNote,
    tags: [route.tag],
    security: surface.kind === 'tenant' ? [{ bearerAuth: [] }, { apiKeyHeader: [] }] : [{ adminToken: [] }],
    request,
    responses,
  });
}

