// Over 300 lines because it is the one path every route's request takes (parse, validate, call, map errors, write); split, the order of those steps would be spread over files.
import express, { type Request, type RequestHandler, type Response } from 'express';
import { sendBinary } from './binary';
import { errorResult, fail, send, type HttpResult } from './errors';
import { IDEMPOTENCY_HEADER, IDEMPOTENCY_KEY, idempotent, requestHash } from './idempotency';
import { localsOf, type GatewayLocals } from './middleware';
import { drainRequest, readMultipart, type MultipartReader } from './multipart';
import { refusal } from './refusals';
import { responseProblem } from './response-check';
import {
  bodyKind,
  deprecationHeaders,
  type AnyRoute,
  type AnyZod,
  type MultipartSpec,
  type RouteContext,
  type Surface,
} from './route';
import { isBinary, type RouteResult } from './result';

/**
 * Execution of one route: scope → rate limit → body (415/413/400) → validation (400 with details)
 * → Idempotency-Key → handler → answer (JSON or a stream). The kill switch and the key were
 * checked by the router's middleware before. One Express handler per route: every extra layer
 * costs on every request.
 */
export function routeHandler(surface: Surface, route: AnyRoute): RequestHandler {
  const scopes = surface.kind === 'tenant' && route.scopes?.length ? route.scopes : undefined;
  const limiter = surface.rateLimit;
  const body = bodyKind(route);
  const json =
    body?.kind === 'json' || body?.kind === 'none'
      ? express.json({ limit: route.bodyLimitBytes ?? surface.bodyLimitBytes, strict: true, type: () => true })
      : undefined;
  const execute = execution(surface, route);
  const deprecation = deprecationHeaders(route);

  // An unexpected throw after the handler (a broken stream, say) reaches the app's error handler.
  return (req, res, next) => {
    const locals = localsOf(res);
    if (deprecation) res.set(deprecation);
    if (scopes) {
      const held = locals.auth?.scopes;
      const missing = scopes.filter((s) => !held?.has(s));
      if (missing.length)
        return fail(res, 'forbidden', `API key lacks required scope: ${missing.join(', ')}`, { missing });
    }
    if (limiter && !limiter.admit(res, locals.auth)) return;
    switch (body?.kind) {
      case undefined:
        return void execute(req, res, locals, undefined).catch(next);
      case 'json':
        if (hasBody(req) && !req.is('application/json')) {
          return fail(res, 'unsupported_media_type', 'request body must be JSON with Content-Type: application/json');
        }
        // Parser failures (413, malformed JSON) go to the app's error handler, which answers them.
        return json!(req, res, (err?: unknown) =>
          err ? next(err) : void execute(req, res, locals, req.body ?? undefined).catch(next),
        );
      case 'none':
        if (!hasBody(req)) return void execute(req, res, locals, undefined).catch(next);
        // Without a Content-Type (some clients send an empty chunked body) it is read like JSON:
        // nothing, or {}, passes.
        if (req.get('content-type') !== undefined && !req.is('application/json'))
          return fail(res, 'unsupported_media_type', NO_BODY);
        return json!(req, res, (err?: unknown) => {
          if (err) return next(err);
          if (!isEmptyObject(req.body))
            return fail(res, 'validation_error', NO_BODY, {
              details: [{ path: 'body', message: 'must be empty or {}' }],
            });
          void execute(req, res, locals, undefined).catch(next);
        });
      case 'multipart':
        if (!req.is('multipart/form-data'))
          return fail(res, 'unsupported_media_type', 'request body must be multipart/form-data');
        return void executeMultipart(surface, body, execute, req, res, locals).catch(next);
    }
  };
}

const NO_BODY = 'this endpoint takes no request body: send none, or {} as JSON';

const hasBody = (req: Request) =>
  Number(req.get('content-length') ?? 0) > 0 || req.get('transfer-encoding') !== undefined;

const isEmptyObject = (v: unknown) =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && Object.keys(v).length === 0;

/** A streamed multipart body: its reader, and what of it the idempotency hash covers. */
interface Upload {
  reader: MultipartReader;
  hashed: unknown;
}

type Execute = (req: Request, res: Response, locals: GatewayLocals, body: unknown, upload?: Upload) => Promise<void>;

/** Validation, the Idempotency-Key protocol, the handler and the answer, for a body already read. */
function execution(surface: Surface, route: AnyRoute): Execute {
  const { log } = surface;
  const idempotency = route.method === 'post' ? surface.idempotency : undefined;
  const schema = bodyKind(route)?.kind === 'json' ? (route.body as AnyZod) : undefined;
  const name = `${route.method.toUpperCase()} ${route.path}`;
  // The parameters it defines, known when the route is mounted (a route whose query schema has
  // no keys to read fails at start, not on a request).
  const definedParams = queryParams(route.query);
  const headerNames = route.headers
    ? Object.keys((route.headers as unknown as { shape: Record<string, unknown> }).shape)
    : [];

  return async (req, res, locals, rawBody, upload) => {
    const { requestId, auth } = locals;
    const reader = upload?.reader;
    const ctx: RouteContext = {
      requestId,
      auth,
      requestBase: `${req.protocol}://${req.get('host') ?? 'localhost'}`,
      call: auth ? { tenantId: auth.tenantId, keyId: auth.keyId, keyMode: auth.mode, requestId } : { requestId },
    };
    let params: unknown;
    let query: unknown;
    let body: unknown = rawBody;
    // No schema, nothing to parse: most routes have one or two of the three.
    if (route.params) {
      const r = parse(route.params, req.params, 'path');
      if (r instanceof Invalid) return answerInvalid(res, r, reader);
      params = r;
    }
    // Strict: a parameter the route does not define is refused, never ignored (with the
    // "simple" query parser, `type[$ne]=x` is a parameter named `type[$ne]`).
    const undefinedParams = Object.keys(req.query as object).filter((k) => !definedParams.has(k));
    if (undefinedParams.length > 0) return answerInvalid(res, unknownParams(undefinedParams), reader);
    if (route.query) {
      const r = parse(route.query, req.query, 'query');
      if (r instanceof Invalid) return answerInvalid(res, r, reader);
      query = r;
    }
    if (route.headers) {
      const r = parse(route.headers, Object.fromEntries(headerNames.map((name) => [name, req.get(name)])), 'header');
      if (r instanceof Invalid) return answerInvalid(res, r, reader);
      ctx.headers = r as Record<string, string | undefined>;
    }
    if (schema) {
      const r = parse(schema, rawBody, 'body');
      if (r instanceof Invalid) return answerInvalid(res, r, reader);
      body = r;
    }

    if (route.ownIdempotencyKey) {
      const key = req.get(IDEMPOTENCY_HEADER);
      if (key !== undefined && !IDEMPOTENCY_KEY.test(key)) {
        return answerInvalid(
          res,
          new Invalid('Idempotency-Key must be 1–255 visible ASCII characters', [
            { path: 'header.Idempotency-Key', message: 'invalid' },
          ]),
          reader,
        );
      }
      if (key !== undefined) ctx.idempotencyKey = key;
    }

    const exec = async (): Promise<RouteResult> => {
      let result: RouteResult;
      try {
        result = await route.handler({ params, query, body }, ctx);
      } catch (err) {
        result = errorResult(err, log, requestId);
      }
      if (reader) result = await settleUpload(reader, result, log, requestId);
      if (surface.checkResponses) result = checked(result, route, name, log, requestId);
      return result;
    };

    const idemKey = idempotency && auth ? req.get(IDEMPOTENCY_HEADER) : undefined;
    let result: RouteResult;
    if (idemKey === undefined) {
      result = await exec();
    } else {
      if (!IDEMPOTENCY_KEY.test(idemKey)) {
        return answerInvalid(
          res,
          new Invalid('Idempotency-Key must be 1–255 visible ASCII characters', [
            { path: 'header.Idempotency-Key', message: 'invalid' },
          ]),
          reader,
        );
      }
      ctx.idempotencyKey = idemKey;
      const hash = requestHash(req.method, req.originalUrl, upload ? upload.hashed : body);
      const outcome = await idempotent(
        idempotency!,
        { tenantId: auth!.tenantId, mode: auth!.mode, key: idemKey },
        hash,
        exec,
        log,
        requestId,
      );
      if (outcome.replayed) res.setHeader('Idempotent-Replayed', 'true');
      result = outcome.result;
    }
    if (isBinary(result)) await sendBinary(res, result, log, requestId);
    else send(res, result);
    afterEarlyAnswer(res, reader);
  };
}

/**
 * After the handler: the body's own failure (over the limit, malformed) wins over what the handler
 * answered. A successful handler's body is read to its end (unread parts discarded, limit still
 * counted); after a failure the rest is only read and dropped (see afterEarlyAnswer).
 */
async function settleUpload(
  reader: MultipartReader,
  result: RouteResult,
  log: Surface['log'],
  requestId: string,
): Promise<RouteResult> {
  if (!reader.error && result.status < 400) await reader.finish();
  return reader.error ? errorResult(reader.error, log, requestId) : result;
}

async function executeMultipart(
  surface: Surface,
  spec: MultipartSpec,
  execute: Execute,
  req: Request,
  res: Response,
  locals: GatewayLocals,
): Promise<void> {
  const { log } = surface;
  let reader: MultipartReader;
  try {
    reader = readMultipart(req, spec);
  } catch (err) {
    // Refused from the headers alone (declared length over the limit): the body is not parsed,
    // only dropped after the answer, so a client sending it all reads the answer.
    send(res, errorResult(err, log, locals.requestId));
    return closeUnlessDrained(res, drainRequest(req));
  }
  let head: Awaited<MultipartReader['head']>;
  try {
    head = await reader.head;
  } catch (err) {
    send(res, errorResult(err, log, locals.requestId));
    return afterEarlyAnswer(res, reader);
  }
  const fields = parse(spec.fields, head.fields, 'body');
  if (fields instanceof Invalid) return answerInvalid(res, fields, reader);
  // The file's bytes are not read before the claim: the idempotency hash covers the text fields
  // and the first file part's name, file name and content type.
  // Fields after the file are not in the hash: they arrive after the claim.
  const first = head.first && {
    field: head.first.field,
    filename: head.first.filename,
    contentType: head.first.contentType,
  };
  const fieldsAfterFiles = async () => {
    await reader.finish();
    if (reader.error) throw reader.error;
    const late = parse(spec.fields.partial(), reader.lateFields, 'body');
    if (late instanceof Invalid) throw refusal('validation_error', late.message, late.details);
    return late;
  };
  return execute(
    req,
    res,
    locals,
    { fields, files: reader.files, fieldsAfterFiles },
    { reader, hashed: { fields, first } },
  );
}

function answerInvalid(res: Response, invalid: Invalid, reader: MultipartReader | undefined): void {
  fail(res, 'validation_error', invalid.message, { details: invalid.details });
  afterEarlyAnswer(res, reader);
}

/**
 * An answer sent before the upload was read to its end (refused, or over the limit): the rest is
 * read and dropped, so a client that sends its whole body before reading (curl, fetch) reads the
 * answer instead of a reset; past the drain's bound the connection is closed.
 */
function afterEarlyAnswer(res: Response, reader: MultipartReader | undefined): void {
  if (reader && !reader.ended) closeUnlessDrained(res, reader.drain());
}

/** Past the drain's bound (the client still sending), the connection is closed. */
function closeUnlessDrained(res: Response, drained: Promise<boolean>): void {
  void drained.then((ended) => {
    if (!ended) res.socket?.destroy();
  });
}

/** Test harness only: an answer that differs from its documentation is a loud 500. */
function checked(
  result: RouteResult,
  route: AnyRoute,
  name: string,
  log: Surface['log'],
  requestId: string,
): RouteResult {
  const problem = responseProblem(route, result);
  if (!problem) return result;
  log.error(
    { route: name, status: result.status, problem, requestId },
    'answer does not match the documented response',
  );
  const failure: HttpResult = {
    status: 500,
    body: { error: `answer of ${name} does not match its documentation: ${problem}`, reasonCode: 'internal_error' },
  };
  return failure;
}

class Invalid {
  constructor(
    readonly message: string,
    readonly details: { path: string; message: string }[],
  ) {}
}

const NO_PARAMS = new Set<string>();

/** The query parameters a route defines: the keys of its query schema (an object schema). */
function queryParams(schema: AnyZod | undefined): Set<string> {
  if (!schema) return NO_PARAMS;
  const shape = (schema as { shape?: Record<string, unknown> }).shape;
  if (!shape)
    throw new Error("a route's query schema must be an object schema (its keys are the parameters it defines)");
  return new Set(Object.keys(shape));
}

function unknownParams(names: string[]): Invalid {
  const details = names.map((n) => ({ path: `query.${n}`, message: 'is not a parameter of this endpoint' }));
  return new Invalid(`invalid query: ${details[0]!.path} ${details[0]!.message}`, details);
}

function parse(schema: AnyZod, value: unknown, where: 'path' | 'query' | 'header' | 'body'): unknown {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const details = r.error.issues.map((i) => ({ path: [where, ...i.path.map(String)].join('.'), message: i.message }));
  const first = details[0];
  return new Invalid(first ? `invalid ${where}: ${first.path} ${first.message}` : `invalid ${where}`, details);
}
