import { OpenAPIRegistry, OpenApiGeneratorV31, type RouteConfig } from '@asteasolutions/zod-to-openapi';
import { ErrorBody } from './errors';
import { IDEMPOTENCY_KEY } from './idempotency';
import { bodyKind, type AnyRoute, type MultipartSpec, type Surface } from './route';
import { z } from './zod';

/** The OpenAPI side of a route: its operation, request body kinds and every answer it can give. */

const COMMON_ERRORS: Record<Surface['kind'], Record<number, string>> = {
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

/** Bytes, as OpenAPI describes a file part or a streamed answer. */
const BINARY = { type: 'string', format: 'binary' } as const;

export function documentRoute(surface: Surface, route: AnyRoute): void {
  const errors: Record<number, string> = { ...COMMON_ERRORS[surface.kind], ...route.errors };
  if (route.scopes?.length) errors[403] = `Key lacks scope ${route.scopes.map((s) => `\`${s}\``).join(', ')} (\`forbidden\`, \`missing\` names it)`;
  const body = bodyKind(route);
  const request: RouteConfig['request'] = {};
  if (route.params) request.params = route.params as never;
  if (route.query) request.query = route.query as never;
  switch (body?.kind) {
    case 'json':
      errors[413] = 'Body over the size limit (`payload_too_large`)';
      errors[415] = 'Body is not JSON (`unsupported_media_type`)';
      request.body = { required: true, content: { 'application/json': { schema: body.schema } } };
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
      request.body = { required: true, description: 'Text fields first, then the file part(s).', content: { 'multipart/form-data': multipartMedia(body) } };
      break;
  }
  const idempotent = surface.kind === 'tenant' && route.method === 'post';
  if (idempotent) {
    errors[409] ??= 'A request with this Idempotency-Key is still running (`idempotency_in_progress`)';
    errors[422] ??= 'This Idempotency-Key was used with another body (`idempotency_key_reused`)';
    request.headers = z.object({
      'Idempotency-Key': z.string().regex(IDEMPOTENCY_KEY).optional().openapi({
        description: 'Makes a retry safe: same key and body within 24 h replays the first answer (`Idempotent-Replayed: true`)',
      }),
    });
  }
  const responses: RouteConfig['responses'] = {};
  for (const [status, r] of Object.entries(route.responses)) {
    const content: NonNullable<Extract<RouteConfig['responses'][string], { description: string }>['content']> = {};
    if (r.schema) content['application/json'] = { schema: r.schema };
    for (const type of r.binary ?? []) content[type] = { schema: BINARY };
    responses[status] = Object.keys(content).length ? { description: r.description, content } : { description: r.description };
  }
  for (const [status, description] of Object.entries(errors)) {
    responses[status] ??= { description, content: { 'application/json': { schema: ErrorBody } } };
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
  registry.registerComponent('securitySchemes', 'adminToken', { type: 'http', scheme: 'bearer', description: 'ADMIN_TOKEN' });
  return registry;
}

export function buildDocument(registry: OpenAPIRegistry, title: string, description: string): object {
  return new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: '3.1.0',
    info: { title, version: '1.0.0', description },
  });
}
