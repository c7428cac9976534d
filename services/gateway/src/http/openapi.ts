import { OpenAPIRegistry, OpenApiGeneratorV31, type RouteConfig } from '@asteasolutions/zod-to-openapi';
import { ErrorBody } from './errors';
import { IDEMPOTENCY_KEY } from './idempotency';
import { allowHeader, bodyKind, operationIdOf, type AnyRoute, type MultipartSpec, type Surface } from './route';
import { z } from './zod';

/** The OpenAPI side of a route: its operation, request body kinds and every answer it can give. */

/** Every surface refuses the same way: a body or parameter that does not fit, or a query parameter it does not define. */
const INVALID =
  'Invalid request (`validation_error`, with `details` naming each field): a body or path that does not fit, or a query parameter the endpoint does not define or in a form it does not take (`type[$ne]=`, `page[]=`, given twice)';

const COMMON_ERRORS: Record<Surface['kind'], Record<number, string>> = {
  tenant: {
    400: INVALID,
    401: 'Missing, malformed, unknown or inactive key (`unauthorized`)',
    429: 'Rate limit exceeded (`rate_limited`); see `Retry-After` and `RateLimit-*` headers',
    500: 'Unexpected failure (`internal_error`)',
    503: 'Kill switch on (`api_globally_disabled`) or a service is down (`service_unavailable`)',
    504: 'A backing service did not answer in time (`upstream_timeout`)',
  },
  signed: {
    400: INVALID,
    500: 'Unexpected failure (`internal_error`)',
    503: 'Kill switch on (`api_globally_disabled`) or a service is down (`service_unavailable`)',
  },
  admin: {
    400: INVALID,
    401: 'Missing or wrong operator token (`unauthorized`)',
    429: 'Too many wrong operator tokens from this address (`rate_limited`); every request from it is refused until `Retry-After`',
    500: 'Unexpected failure (`internal_error`)',
  },
};

/** Response headers the server sends, as OpenAPI header objects. */
const header = (description: string, type: 'string' | 'integer' = 'string', example?: string | number) => ({
  description,
  schema: { type, ...(example !== undefined && { example }) },
});
const HEADERS = {
  requestId: header(
    "The request id: the caller's `X-Request-Id` when it is 1–128 characters of `[A-Za-z0-9_.:-]`, otherwise a new UUID",
    'string',
    '7f4c1f7e-3b9e-4f7a-9c51-1f0b8a1e2d3c',
  ),
  cacheControl: header('Always `no-store`: answers are private to their caller', 'string', 'no-store'),
  rateLimitLimit: header(
    "Requests the key may make per window (its `rateLimitPerSecond` or the server's default)",
    'integer',
    50,
  ),
  rateLimitRemaining: header('Requests left in the current window', 'integer', 49),
  rateLimitReset: header('Seconds until the current window ends', 'integer', 1),
  retryAfter: header('Seconds to wait before retrying', 'integer', 1),
  replayed: header(
    '`true` when this is the stored answer to an earlier request with the same Idempotency-Key',
    'string',
    'true',
  ),
  wwwAuthenticate: header('The scheme that would work', 'string', 'Bearer'),
  deprecation: header(
    'RFC 9745: when this operation was deprecated (`@<seconds since the epoch>`)',
    'string',
    '@1796083200',
  ),
  sunset: header('RFC 8594: after this moment the operation may be removed', 'string', 'Sat, 01 May 2027 00:00:00 GMT'),
  link: header(
    '`rel="deprecation"`: the changelog that says what to use instead',
    'string',
    '</docs/changelog>; rel="deprecation"',
  ),
};

/** The headers an answer with this status carries on this surface and route. */
function responseHeaders(surface: Surface, route: AnyRoute, status: number) {
  const headers: Record<string, ReturnType<typeof header>> = {
    'X-Request-Id': HEADERS.requestId,
    'Cache-Control': HEADERS.cacheControl,
  };
  // Tenant answers after the scope check count against the key's limit (401 and 403 come before).
  if (surface.kind === 'tenant' && status !== 401 && status !== 403) {
    headers['RateLimit-Limit'] = HEADERS.rateLimitLimit;
    headers['RateLimit-Remaining'] = HEADERS.rateLimitRemaining;
    headers['RateLimit-Reset'] = HEADERS.rateLimitReset;
  }
  if (status === 429 || status === 503 || status === 504) headers['Retry-After'] = HEADERS.retryAfter;
  if (status === 401) headers['WWW-Authenticate'] = HEADERS.wwwAuthenticate;
  // Answers below 500 are stored and replayed (decision 0007).
  if (surface.kind === 'tenant' && route.method === 'post' && status < 500)
    headers['Idempotent-Replayed'] = HEADERS.replayed;
  if (route.deprecated)
    Object.assign(headers, { Deprecation: HEADERS.deprecation, Sunset: HEADERS.sunset, Link: HEADERS.link });
  return headers;
}

/** operationIds already used per document: they must be unique. */
const operationIds = new WeakMap<object, Set<string>>();

/** Bytes, as OpenAPI describes a file part or a streamed answer. */
const BINARY = { type: 'string', format: 'binary' } as const;

export function documentRoute(surface: Surface, route: AnyRoute): void {
  const errors: Record<number, string> = { ...COMMON_ERRORS[surface.kind], ...route.errors };
  if (route.scopes?.length)
    errors[403] = `Key lacks scope ${route.scopes.map((s) => `\`${s}\``).join(', ')} (\`forbidden\`, \`missing\` names it)`;
  const body = bodyKind(route);
  const request: RouteConfig['request'] = {};
  if (route.params) request.params = route.params as never;
  if (route.query) request.query = route.query as never;
  if (route.headers) request.headers = route.headers as never;
  switch (body?.kind) {
    case 'json':
      errors[413] = 'Body over the size limit (`payload_too_large`)';
      errors[415] = 'Body is not JSON (`unsupported_media_type`)';
      request.body = {
        required: true,
        content: { 'application/json': { schema: route.documentedBody ?? body.schema } },
      };
      break;
    case 'none':
      errors[413] = 'Body over the size limit (`payload_too_large`)';
      errors[415] = 'A body that is not JSON (`unsupported_media_type`); this endpoint takes none';
      request.body = {
        required: false,
        description: 'None. An empty JSON object is accepted too; anything else is refused.',
        content: { 'application/json': { schema: { type: 'object', maxProperties: 0 } } },
      };
      break;
    case 'multipart':
      errors[413] = `Upload over ${body.maxBytes} bytes (\`payload_too_large\`)`;
      errors[415] = 'Body is not multipart/form-data, or a file of a type not accepted (`unsupported_media_type`)';
      request.body = {
        required: true,
        description: 'Text fields first, then the file part(s).',
        content: { 'multipart/form-data': multipartMedia(body) },
      };
      break;
  }
  const idempotent = surface.kind === 'tenant' && route.method === 'post';
  if (idempotent) {
    errors[409] ??= 'A request with this Idempotency-Key is still running (`idempotency_in_progress`)';
    errors[422] ??= 'This Idempotency-Key was used with another body (`idempotency_key_reused`)';
    request.headers = z.object({
      'Idempotency-Key': z
        .string()
        .regex(IDEMPOTENCY_KEY)
        .optional()
        .openapi({
          description:
            'Makes a retry safe: the same key (per tenant and key mode) with the same method, URL and body within 24 h replays the ' +
            'first answer (its status and body, with `Idempotent-Replayed: true`) without running the request again. The replay is ' +
            'the stored answer as it was: it is returned even if the resource it names was changed or deleted since. ' +
            'While the first request runs: 409 `idempotency_in_progress`; another body with the same key: 422 `idempotency_key_reused`.',
        }),
    });
  }
  if (route.ownIdempotencyKey) {
    request.headers = z.object({
      'Idempotency-Key': z.string().regex(IDEMPOTENCY_KEY).optional().openapi({ description: route.ownIdempotencyKey }),
    });
  }
  const responses: RouteConfig['responses'] = {};
  for (const [status, r] of Object.entries(route.responses)) {
    const content: NonNullable<Extract<RouteConfig['responses'][string], { description: string }>['content']> = {};
    if (r.schema) content['application/json'] = { schema: r.schema };
    for (const type of r.binary ?? []) content[type] = { schema: BINARY };
    const headers = responseHeaders(surface, route, Number(status));
    responses[status] = Object.keys(content).length
      ? { description: r.description, headers, content }
      : { description: r.description, headers };
  }
  for (const [status, description] of Object.entries(errors)) {
    responses[status] ??= {
      description,
      headers: responseHeaders(surface, route, Number(status)),
      content: { 'application/json': { schema: ErrorBody } },
    };
  }
  const operationId = operationIdOf(route);
  const used = operationIds.get(surface.registry) ?? new Set<string>();
  operationIds.set(surface.registry, used);
  if (used.has(operationId))
    throw new Error(
      `operationId ${operationId} of ${route.method.toUpperCase()} ${route.path} is used twice: set operationId on one`,
    );
  used.add(operationId);
  const scopeNote =
    surface.kind === 'tenant'
      ? `\n\nScope: ${route.scopes?.length ? route.scopes.map((s) => `\`${s}\``).join(', ') : 'none (any valid key)'}.`
      : surface.kind === 'signed'
        ? '\n\nNo key: the signed URL is the authorisation.'
        : '';
  const sunsetNote = route.deprecated
    ? `\n\n**Deprecated** since ${route.deprecated.since}; it may be removed after ${route.deprecated.sunset}. Use instead: ${route.deprecated.use}.`
    : '';
  surface.registry.registerPath({
    method: route.method,
    path: surface.prefix + route.path,
    operationId,
    summary: route.summary,
    description: (route.description ?? '') + scopeNote + sunsetNote,
    ...(route.deprecated && {
      deprecated: true,
      'x-sunset': route.deprecated.sunset,
      'x-use-instead': route.deprecated.use,
    }),
    tags: [route.tag],
    security:
      surface.kind === 'tenant'
        ? [{ bearerAuth: [] }, { apiKeyHeader: [] }]
        : surface.kind === 'signed'
          ? []
          : [{ adminToken: [] }],
    request,
    responses,
  });
}

/** Text fields as the route's schema says, file fields as binary (an array when more than one). */
function multipartMedia(spec: MultipartSpec) {
  const files: Record<string, z.ZodType> = {};
  const encoding: Record<string, { contentType: string }> = {};
  for (const [name, f] of Object.entries(spec.files)) {
    const one = z.string().openapi({ format: 'binary', description: f.description });
    const field = (f.maxCount ?? 1) > 1 ? z.array(one).max(f.maxCount!) : one;
    files[name] = f.required ? field : field.optional();
    if (f.contentTypes) encoding[name] = { contentType: f.contentTypes.join(', ') };
  }
  return { schema: spec.fields.extend(files), ...(Object.keys(encoding).length && { encoding }) };
}

export function tenantRegistry(): OpenAPIRegistry {
  const registry = new OpenAPIRegistry();
  registry.registerComponent('securitySchemes', 'bearerAuth', {
    type: 'http',
    scheme: 'bearer',
    description: 'API key (`sk_live_…` or `sk_sandbox_…`); the reference page adds the word Bearer',
  });
  registry.registerComponent('securitySchemes', 'apiKeyHeader', { type: 'apiKey', in: 'header', name: 'X-API-Key' });
  return registry;
}

export function adminRegistry(): OpenAPIRegistry {
  const registry = new OpenAPIRegistry();
  registry.registerComponent('securitySchemes', 'adminToken', {
    type: 'http',
    scheme: 'bearer',
    description: 'ADMIN_TOKEN',
  });
  return registry;
}

export interface Tag {
  name: string;
  description: string;
}

const METHOD_NOT_ALLOWED =
  'A path called with a method it does not have answers 405 `method_not_allowed` with the error body and an `Allow` header ' +
  'naming the methods it has (HEAD wherever GET is). Every answer carries `X-Request-Id` and `Cache-Control: no-store`. ' +
  "A request head (URL and header fields) over the server's limit (`MAX_HEADER_BYTES`, 16 KiB by default) answers 414 " +
  '`uri_too_long` when the URL alone is too long, else 431 `headers_too_large`; a request with more than one `Host` header, ' +
  'or one that is not valid HTTP/1.1, answers 400 `validation_error`; each with the error body, and the connection closes.';

/**
 * The document: operations as registered, `servers` relative to where it is served, the tags with
 * their descriptions (an operation's tag must be one of them), and for each path the methods it
 * answers (others: 405 with `Allow`).
 */
export function buildDocument(
  registry: OpenAPIRegistry,
  info: { title: string; version: string; description: string },
  tags: Tag[] = [],
): object {
  const doc = new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: '3.1.0',
    info: { ...info, description: `${info.description}\n\n${METHOD_NOT_ALLOWED}` },
    servers: [{ url: '/', description: 'This server' }],
    ...(tags.length && { tags }),
  });
  const known = new Set(tags.map((t) => t.name));
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    const methods = (['get', 'put', 'post', 'delete', 'patch'] as const).filter((m) => item[m]);
    for (const m of methods) {
      for (const tag of item[m]!.tags ?? [])
        if (tags.length && !known.has(tag))
          throw new Error(`${m.toUpperCase()} ${path}: tag "${tag}" has no description`);
    }
    const allow = allowHeader(methods);
    item.description = `Methods: ${allow}. Any other method answers 405 \`method_not_allowed\` with \`Allow: ${allow}\`.`;
  }
  return doc;
}
