import { createHash } from 'node:crypto';
import type { KeyMode } from '@voiceapi/kit/grpc';
import type { Logger } from '@voiceapi/kit/service';
import { errorResult, type HttpResult } from './errors';
import { isBinary, type RouteResult } from './result';

/** The Idempotency-Key protocol of decision 0007: claim, replay, 409 while running, 422 on another body. */

export const IDEMPOTENCY_HEADER = 'idempotency-key';
/** 1–255 visible ASCII characters. */
export const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

export type StoredResponse = { status: number; body: unknown };
export type IdempotencyClaim = { kind: 'claimed'; id: unknown } | { kind: 'replay'; response: StoredResponse };

/**
 * What the protocol needs from the records (services/gateway/src/store/idempotency.ts is the real one).
 * `claim` throws DomainError `idempotency_in_progress` while another request holds the key and
 * `idempotency_key_reused` for another request hash.
 */
export interface IdempotencyRecords {
  claim(scope: { tenantId: string; mode: KeyMode; key: string }, requestHash: string): Promise<IdempotencyClaim>;
  complete(id: unknown, response: StoredResponse): Promise<void>;
  release(id: unknown): Promise<void>;
}

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

/** Same method, URL and (canonical) body → same hash. */
export const requestHash = (method: string, url: string, body: unknown): string =>
  createHash('sha256')
    .update(`${method} ${url}\n${canonical(body)}`)
    .digest('hex');

export type IdempotencyOutcome = { result: RouteResult; replayed: boolean };

/**
 * Runs `exec` at most once per (tenant, key mode, Idempotency-Key): the first request claims the
 * key and its answer (below 500) is stored; a repeat replays it; our own failures (5xx) free the
 * key for a retry. A streamed answer is not stored: the key is released after it.
 */
export async function idempotent(
  records: IdempotencyRecords,
  scope: { tenantId: string; mode: KeyMode; key: string },
  hash: string,
  exec: () => Promise<RouteResult>,
  log: Logger,
  requestId: string,
): Promise<IdempotencyOutcome> {
  let claim: IdempotencyClaim;
  try {
    claim = await records.claim(scope, hash);
  } catch (err) {
    return { result: errorResult(err, log, requestId), replayed: false };
  }
  if (claim.kind === 'replay') return { result: claim.response, replayed: true };
  const result = await exec();
  // Failing to record the answer must not hide it: the write happened, so the caller gets it.
  try {
    if (!isBinary(result) && result.status < 500) await records.complete(claim.id, storable(result));
    else await records.release(claim.id);
  } catch (err) {
    log.warn({ err, requestId }, 'could not record the idempotent answer');
  }
  return { result, replayed: false };
}

const storable = (r: HttpResult): StoredResponse => ({ status: r.status, body: r.body });
