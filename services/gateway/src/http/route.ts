// Over 300 lines because it declares what a route is (bodies, results, deprecation) in one place that every route area and the OpenAPI document read.
import type { Readable } from 'node:stream';
import type { RequestHandler } from 'express';
import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import type { CallContext } from '@voiceapi/kit/grpc';
import type { Logger } from '@voiceapi/kit/service';
import type { AuthenticatedKey } from '../auth/key-cache';
import { CHANGELOG_PATH } from './api-release';
import type { Scope } from '../auth/scopes';
import type { IdempotencyRecords } from './idempotency';
import type { RouteResult } from './result';
import type { RateLimiter } from './rate-limit';
import type { z } from './zod';

/**
 * What a route is: one definition gives the Express handler (mount.ts, execute.ts), the
 * Idempotency-Key protocol (idempotency.ts) and the OpenAPI operation (openapi.ts).
 */

export type AnyZod = z.ZodType;

/** One API surface (tenant or operator): where its routes are mounted and what applies to all. */
export interface Surface {
  /** `signed`: tenant routes whose URL carries its own authorisation (a signed token), served without a key. */
  kind: 'tenant' | 'admin' | 'signed';
  /** URL prefix the router is mounted under, e.g. `/api/v1`. */
  prefix: string;
  registry: OpenAPIRegistry;
  /** Per-key rate limit, applied after the scope check (tenant surface only). */
  rateLimit?: RateLimiter;
  idempotency?: IdempotencyRecords;
  /** Largest JSON body. */
  bodyLimitBytes: number;
  log: Logger;
  /** Test harnesses: every answer is checked against its documentation (RESPONSE_SCHEMA_CHECK). */
  checkResponses?: boolean;
  /** Run before each route of a surface whose router has no common middleware (the signed routes: request id, kill switch). */
  guards?: RequestHandler[];
}

export interface RouteContext {
  requestId: string;
  /** The caller's key on tenant routes; undefined on operator routes. */
  auth: AuthenticatedKey | undefined;
  /** Metadata for the gRPC call to the owning service. */
  call: CallContext;
  /** `<scheme>://<host>` the request came to: for absolute links in answers. */
  requestBase: string;
  /** The route's own headers (`RouteDef.headers`), checked, by their documented names. */
  headers?: Record<string, string | undefined>;
  /**
   * The request's `Idempotency-Key`: on routes that make retries safe themselves
   * (`ownIdempotencyKey`), and on tenant POSTs that name what they create after it, so a retry
   * after a failure part-way finds what the first try made.
   */
  idempotencyKey?: string;
}

/** One file of a multipart body, streamed as it arrives: read `stream` to its end, or not at all. */
export interface FilePart {
  field: string;
  filename: string;
  contentType: string;
  stream: Readable;
}

export interface FileSpec {
  description: string;
  required?: boolean;
  /** How many files this field may carry (default 1). */
  maxCount?: number;
  /** Accepted content types, exact or `type/*`; others are refused with 415. Omitted: any. */
  contentTypes?: string[];
}

/**
 * A `multipart/form-data` body, streamed. Text fields must come before the file parts: they are
 * validated before the handler runs, and the handler gets the files as they arrive, so it can
 * forward chunks to the owning service without holding the upload. `maxBytes` bounds the whole
 * body and is enforced while reading (413 `payload_too_large`).
 */
export interface MultipartSpec<F extends z.ZodObject = z.ZodObject> {
  kind: 'multipart';
  fields: F;
  files: Record<string, FileSpec>;
  maxBytes: number;
}

/** An action without a body (`POST /contacts/{id}/cancel`): nothing, or `{}` as JSON. */
export interface NoBodySpec {
  kind: 'none';
}

/** A zod schema is a JSON body; `multipart(...)` and `noBody` are the other two kinds. */
export type BodySpec = AnyZod | MultipartSpec | NoBodySpec;

export const multipart = <F extends z.ZodObject>(spec: Omit<MultipartSpec<F>, 'kind'>): MultipartSpec<F> => ({
  kind: 'multipart',
  ...spec,
});
export const noBody: NoBodySpec = { kind: 'none' };

export interface MultipartInput<F> {
  /** The text fields, validated. */
  fields: F;
  /** The file parts in body order; each part's stream must be read before the next one arrives. */
  files: AsyncIterable<FilePart>;
  /** The text fields sent after the file parts, validated; call it once the files were read. */
  fieldsAfterFiles: () => Promise<Partial<F>>;
}

type Infer<S> = S extends AnyZod ? z.infer<S> : undefined;
type InferBody<B> =
  B extends MultipartSpec<infer F> ? MultipartInput<z.infer<F>> : B extends AnyZod ? z.infer<B> : undefined;

export interface ResponseSpec {
  description: string;
  /** JSON answer's schema; omitted with `binary`, or for an empty answer (204). */
  schema?: AnyZod;
  /** Content types of a streamed answer (`audio/mpeg`, `audio/*`). */
  binary?: string[];
}

export type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';

const METHOD_ORDER: Method[] = ['get', 'post', 'put', 'patch', 'delete'];

/** The `Allow` header of a path with these methods (HEAD wherever GET is), in one fixed order. */
export const allowHeader = (methods: Iterable<string>): string => {
  const has = new Set([...methods].map((m) => m.toLowerCase()));
  const allowed = METHOD_ORDER.filter((m) => has.has(m)).map((m) => m.toUpperCase());
  return [...allowed, ...(has.has('get') ? ['HEAD'] : [])].join(', ');
};

export interface RouteDef<P extends AnyZod | undefined, Q extends AnyZod | undefined, B extends BodySpec | undefined> {
  method: Method;
  /** OpenAPI-style path relative to the surface's prefix, e.g. `/companies/{id}`. */
  path: string;
  summary: string;
  tag: string;
  description?: string;
  /**
   * The OpenAPI `operationId`; derived from the method and path when omitted (`GET /companies` →
   * `listCompanies`, `POST /companies/{id}/cancel` → `cancelCompany`, see `operationIdOf`). Set it
   * when the derived name reads badly. Unique per surface: mounting fails otherwise.
   */
  operationId?: string;
  /** Tenant routes: scopes the key must hold (none: any valid key). */
  scopes?: Scope[];
  params?: P;
  query?: Q;
  /**
   * Request headers the route reads (an object schema; names as documented, matched without
   * regard to case), checked like the query and handed over in `RouteContext.headers`.
   */
  headers?: AnyZod;
  /** Required on POST, PUT and PATCH; GET and DELETE read no body. */
  body?: B;
  /** Largest JSON body, for a route that takes more than its surface's (a batch). */
  bodyLimitBytes?: number;
  /**
   * The JSON body as documented, for a route that decides parts of it itself: `body` then checks
   * only the frame (a batch's list), and each item, checked against its documented shape by the
   * handler, is refused in its own result rather than refusing the request.
   */
  documentedBody?: AnyZod;
  responses: Record<number, ResponseSpec>;
  /** Extra documented errors beyond the ones every route can answer. */
  errors?: Record<number, string>;
  /**
   * On a surface without the idempotency store (operators): the route makes a retry safe itself
   * with the `Idempotency-Key` it is handed in its context; this says how, for the document.
   */
  ownIdempotencyKey?: string;
  /**
   * The route is on its way out (docs/operations.md, "Releases"): every answer carries `Deprecation`
   * (RFC 9745) and `Sunset` (RFC 8594), the document marks the operation `deprecated` with `x-sunset`,
   * and `make contracts-check` lets a later change remove it only once the sunset has passed.
   */
  deprecated?: Deprecation;
  handler: (
    input: { params: Infer<P>; query: Infer<Q>; body: InferBody<B> },
    ctx: RouteContext,
  ) => Promise<RouteResult>;
}

/** Dates are `YYYY-MM-DD` (UTC). */
export interface Deprecation {
  /** The day the deprecation was announced (released). */
  since: string;
  /** The day after which the operation may be removed: at least `SUNSET_NOTICE_DAYS` after `since`. */
  sunset: string;
  /** What tenants use instead, for the document and the changelog. */
  use: string;
}

/** The spec's promise: breaking changes are announced at least 90 days ahead. */
export const SUNSET_NOTICE_DAYS = 90;

/**
 * The headers a deprecated route answers with, checked once when it is mounted (a sunset too
 * close to its announcement fails the start, not a tenant's integration).
 */
export function deprecationHeaders(
  route: Pick<AnyRoute, 'method' | 'path' | 'deprecated'>,
): Record<string, string> | undefined {
  const d = route.deprecated;
  if (!d) return undefined;
  const day = (s: string, what: string) => {
    const t = /^\d{4}-\d{2}-\d{2}$/.test(s) ? Date.parse(`${s}T00:00:00Z`) : NaN;
    if (Number.isNaN(t))
      throw new Error(
        `${route.method.toUpperCase()} ${route.path}: deprecated.${what} must be a date YYYY-MM-DD, got ${s}`,
      );
    return t;
  };
  const since = day(d.since, 'since');
  const sunset = day(d.sunset, 'sunset');
  if (sunset - since < SUNSET_NOTICE_DAYS * 86_400_000) {
    throw new Error(
      `${route.method.toUpperCase()} ${route.path}: a sunset ${d.sunset} is less than ${SUNSET_NOTICE_DAYS} days after ${d.since}`,
    );
  }
  return {
    Deprecation: `@${since / 1000}`,
    Sunset: new Date(sunset).toUTCString(),
    Link: `<${CHANGELOG_PATH}>; rel="deprecation"; type="text/markdown"`,
  };
}

// Erases the generic parameters so routes of different shapes can sit in one list.
export type AnyRoute = RouteDef<AnyZod | undefined, AnyZod | undefined, BodySpec | undefined>;

export const defineRoute = <
  P extends AnyZod | undefined = undefined,
  Q extends AnyZod | undefined = undefined,
  B extends BodySpec | undefined = undefined,
>(
  def: RouteDef<P, Q, B>,
): AnyRoute => def;

export type BodyKind = { kind: 'json'; schema: AnyZod } | MultipartSpec | NoBodySpec | undefined;

export function bodyKind(route: AnyRoute): BodyKind {
  const b = route.body;
  if (b === undefined) return undefined;
  if ('kind' in b && (b.kind === 'multipart' || b.kind === 'none')) return b;
  return { kind: 'json', schema: b };
}

/** `audio/mpeg` matches `audio/mpeg` and `audio/*`; parameters (`; charset=…`) are ignored. */
export function contentTypeMatches(actual: string, accepted: readonly string[]): boolean {
  const type = actual.split(';', 1)[0]!.trim().toLowerCase();
  return accepted.some((a) => {
    const want = a.toLowerCase();
    return want.endsWith('/*') ? type.startsWith(want.slice(0, -1)) : type === want;
  });
}

const camel = (words: string[]) => words.map((w, i) => (i === 0 ? w : w.charAt(0).toUpperCase() + w.slice(1))).join('');
const wordsOf = (segment: string) =>
  segment
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean);
const isParam = (segment: string) => segment.startsWith('{');
const singular = (w: string) =>
  w.endsWith('ies') ? `${w.slice(0, -3)}y` : w.endsWith('ss') ? w : w.endsWith('s') ? w.slice(0, -1) : w;
const plural = (segment: string) => segment.endsWith('s') && !segment.endsWith('ss');

/**
 * A stable operationId from the method and path: a collection is `list…`/`create…`, an item
 * `get…`/`update…`/`replace…`/`delete…`, a singleton `get…`/`set…`, and a verb after an item
 * (`POST /api-key-requests/{id}/approve`) names the action (`approveApiKeyRequest`). Segments
 * followed by a parameter are singular (`/tenants/{tenantId}/api-keys` → `…TenantApiKeys`).
 */
export function operationIdOf(route: Pick<AnyRoute, 'method' | 'path' | 'operationId'>): string {
  if (route.operationId) return route.operationId;
  const segments = route.path.split('/').filter(Boolean);
  const last = segments[segments.length - 1] ?? '';
  const afterItem = segments.length >= 2 && isParam(segments[segments.length - 2]!);
  let verb: string;
  let nounSegments = segments;
  let singularLast = false;
  if (isParam(last)) {
    verb = { get: 'get', post: 'create', put: 'replace', patch: 'update', delete: 'delete' }[route.method];
  } else if (afterItem && !plural(last)) {
    // An action on an item: the last word is the verb.
    verb = camel(wordsOf(last));
    nounSegments = segments.slice(0, -1);
  } else if (plural(last)) {
    verb = { get: 'list', post: 'create', put: 'replace', patch: 'update', delete: 'delete' }[route.method];
    singularLast = route.method === 'post';
  } else {
    verb = { get: 'get', post: 'post', put: 'set', patch: 'update', delete: 'delete' }[route.method];
  }
  const nouns: string[] = [];
  nounSegments.forEach((segment, i) => {
    if (isParam(segment)) return;
    const words = wordsOf(segment);
    const next = nounSegments[i + 1];
    const isLast = i === nounSegments.length - 1;
    if ((next !== undefined && isParam(next)) || (isLast && singularLast))
      words[words.length - 1] = singular(words[words.length - 1]!);
    nouns.push(...words);
  });
  return camel([verb, ...nouns.map((w) => w.charAt(0).toUpperCase() + w.slice(1))]);
}
