import { DomainError, domainErrorOf, type ErrorDetail } from '@voiceapi/kit/errors';
import { type Logger } from '@voiceapi/kit/service';
import type { ErrorRequestHandler, Response } from 'express';
import { HTTP_STATUS, httpStatusOf, RETRY_AFTER_SECONDS, type HttpReason } from './reasons';
import { z } from './zod';

export const ErrorBody = z
  .object({
    error: z.string().openapi({ description: 'Human-readable message' }),
    reasonCode: z.string().openapi({ description: 'Machine-readable code', example: 'not_found' }),
    missing: z.array(z.string()).optional().openapi({ description: 'Scopes the key lacks (403 only)' }),
    details: z
      .array(z.object({ path: z.string(), message: z.string() }))
      .optional()
      .openapi({ description: 'Field problems (400)' }),
  })
  .openapi('Error');

export type ErrorBody = z.infer<typeof ErrorBody>;

export interface HttpResult {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

const INTERNAL: HttpResult = { status: 500, body: { error: 'internal error', reasonCode: 'internal_error' } };

/**
 * Any thrown value → the documented error body, its status from the one reason table. A reason
 * the table does not know, and anything that is not a domain error, is logged and answered as
 * 500 `internal_error` without its text.
 */
export function errorResult(raw: unknown, log: Logger, requestId?: string): HttpResult {
  // The gateway's own store away for now is 503 service_unavailable, as a service's is.
  const err = domainErrorOf(raw);
  if (!err) {
    log.error({ err: raw, requestId }, 'unhandled error');
    return INTERNAL;
  }
  const status = httpStatusOf(err.reasonCode);
  if (status === undefined) {
    log.error(
      { reason: err.reasonCode, domain: err.domain, requestId },
      'a service raised a reason the gateway does not know',
    );
    return INTERNAL;
  }
  if (status === 500) return INTERNAL;
  const body: ErrorBody = { error: err.message, reasonCode: err.reasonCode };
  if (err.details?.length) body.details = err.details;
  const headers: Record<string, string> = {};
  const retryAfter = RETRY_AFTER_SECONDS[err.reasonCode as HttpReason];
  if (retryAfter !== undefined) headers['Retry-After'] = String(retryAfter);
  return { status, body, headers };
}

/**
 * A service's field problems name fields of the message it was sent. Where that message is the
 * request body, they are named as the gateway's own checks name them (`body.<field>`), so a
 * client finds one field under one name whichever layer refused it.
 */
export async function withBodyFields<T>(call: Promise<T>): Promise<T> {
  try {
    return await call;
  } catch (err) {
    if (!(err instanceof DomainError) || !err.details?.length) throw err;
    throw new DomainError(err.reasonCode, err.message, {
      ...err.opts,
      details: err.details.map((d) => ({ ...d, path: `body.${d.path}` })),
    });
  }
}

/**
 * Writes a result. Serialises directly instead of through `res.json`, whose content negotiation,
 * ETag and freshness checks this API does not use; they cost measurably on every request.
 */
export function send(res: Response, result: HttpResult): void {
  if (result.headers) for (const [name, value] of Object.entries(result.headers)) res.setHeader(name, value);
  // RFC 9110: a 401 names the scheme that would work.
  if (result.status === 401) res.setHeader('WWW-Authenticate', 'Bearer');
  res.statusCode = result.status;
  if (result.body === undefined) {
    res.end();
    return;
  }
  const payload = JSON.stringify(result.body);
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(payload));
  res.end(payload);
}

/** Answers with the documented error body for a reason code. */
export function fail(
  res: Response,
  reasonCode: HttpReason,
  message: string,
  extra?: { missing?: string[]; details?: ErrorDetail[] },
): void {
  const body: ErrorBody = { error: message, reasonCode };
  if (extra?.missing) body.missing = extra.missing;
  if (extra?.details) body.details = extra.details;
  send(res, { status: HTTP_STATUS[reasonCode], body });
}

/**
 * Last-resort handler: body-parser failures get their documented codes (413, 400), anything
 * else a 500 without a stack trace.
 */
export function errorHandler(log: Logger): ErrorRequestHandler {
  return (err: unknown, req, res, _next) => {
    if (res.headersSent) return;
    const type = (err as { type?: string }).type;
    if (type === 'entity.too.large') return fail(res, 'payload_too_large', 'request body is too large');
    if (type === 'entity.parse.failed') return fail(res, 'validation_error', 'request body is not valid JSON');
    if (type === 'encoding.unsupported' || type === 'charset.unsupported') {
      return fail(res, 'unsupported_media_type', 'request body encoding is not supported');
    }
    if (type === 'request.aborted') return;
    send(res, errorResult(err, log, req.get('x-request-id')));
  };
}
