import { Metadata, status, type ServiceError } from '@grpc/grpc-js';
import { google, voiceapi } from '@voiceapi/proto';
import { isStoreUnavailable } from './mongo/unavailable';

/** gRPC status codes, for `defineReasons` (services need not depend on grpc-js for them). */
export { status as grpcStatus };

/**
 * Errors that cross process boundaries, their reason codes defined per service in proto/ (`reasons.proto`).
 * On the wire: the rich gRPC error (`google.rpc.Status` with `ErrorInfo`, and `BadRequest` for fields).
 * Only the gateway's table maps a reason to an HTTP status.
 */

export interface ErrorDetail {
  path: string;
  message: string;
}

/** An expected failure of a use case, safe to show to the caller. */
export class DomainError extends Error {
  override name = 'DomainError';
  constructor(
    /** Machine-readable reason (`ErrorInfo.reason`), e.g. `not_found`. */
    readonly reasonCode: string,
    message: string,
    readonly opts: {
      /** The declaring service (`ErrorInfo.domain`), e.g. `companies.voiceapi`. */
      domain: string;
      grpcCode: status;
      details?: ErrorDetail[] | undefined;
      /** What it stands for, kept for logs and test reports, never sent on. */
      cause?: unknown;
    },
  ) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
  }

  get domain(): string {
    return this.opts.domain;
  }

  get details(): ErrorDetail[] | undefined {
    return this.opts.details;
  }
}

export interface ReasonCatalogue<R extends string> {
  readonly domain: string;
  readonly reasons: Readonly<Record<R, status>>;
  /** A `DomainError` for one of this catalogue's reasons. */
  error(reason: R, message: string, details?: ErrorDetail[]): DomainError;
}

/**
 * Reason codes with their gRPC statuses, under a domain (`<service>.voiceapi`). Services use `contractReasons`;
 * this form is for reasons that never leave one process (the gateway's own) and for tests.
 */
export function defineReasons<R extends string>(domain: string, reasons: Record<R, status>): ReasonCatalogue<R> {
  const frozen = Object.freeze({ ...reasons });
  return {
    domain,
    reasons: frozen,
    error: (reason, message, details) =>
      new DomainError(reason, message, { domain, grpcCode: frozen[reason], details }),
  };
}

/** A `<Service>Reason` enum as ts-proto generates it from proto/ (`BILLING_REASON_WALLET_BUSY = 4`). */
export type ReasonEnum = Record<string, string | number>;
type PrefixOf<E extends ReasonEnum> = {
  [K in keyof E & string]: K extends `${infer P}UNSPECIFIED` ? P : never;
}[keyof E & string];
/** The wire codes of a reason enum: its values' names without the prefix, in lower case (`wallet_busy`). */
export type ReasonCodeOf<E extends ReasonEnum> = {
  [K in keyof E & string]: K extends `${PrefixOf<E>}UNSPECIFIED`
    ? never
    : K extends `${PrefixOf<E>}${infer R}`
      ? Lowercase<R>
      : never;
}[keyof E & string];

/** `ReasonCodeOf` at run time. */
export function reasonCodesOf(reasonEnum: ReasonEnum): string[] {
  const unspecified = Object.keys(reasonEnum).find((k) => k.endsWith('_UNSPECIFIED'));
  if (!unspecified) throw new Error('a reason enum starts with its <PREFIX>_UNSPECIFIED value');
  const prefix = unspecified.slice(0, -'UNSPECIFIED'.length);
  return Object.keys(reasonEnum)
    .filter((k) => k.startsWith(prefix) && k !== unspecified)
    .map((k) => k.slice(prefix.length).toLowerCase());
}

/**
 * A service's reasons as its `<Service>Reason` enum in proto/ defines them, with their gRPC statuses; a
 * status missing fails to compile, and a mismatch at run time (a stale build) fails at start.
 */
export function contractReasons<E extends ReasonEnum>(
  domain: string,
  reasonEnum: E,
  statuses: Record<ReasonCodeOf<E>, status>,
): ReasonCatalogue<ReasonCodeOf<E>> {
  const codes = reasonCodesOf(reasonEnum).sort();
  const given = Object.keys(statuses).sort();
  if (codes.join() !== given.join())
    throw new Error(`${domain}: the reasons [${given.join(', ')}] are not the contract's [${codes.join(', ')}]`);
  return defineReasons(domain, statuses);
}

/** The codes every process may raise or meet: generic request problems and transport failures. */
export const commonReasons = contractReasons('voiceapi', voiceapi.common.v1.CommonReason, {
  validation_error: status.INVALID_ARGUMENT,
  unauthorized: status.UNAUTHENTICATED,
  not_found: status.NOT_FOUND,
  conflict: status.ALREADY_EXISTS,
  internal_error: status.INTERNAL,
  service_unavailable: status.UNAVAILABLE,
  upstream_timeout: status.DEADLINE_EXCEEDED,
});

export type CommonReason = keyof typeof commonReasons.reasons;

export const notFound = (what = 'resource'): DomainError => commonReasons.error('not_found', `${what} not found`);

/** Whether a failure is this reason, of any service. */
export const isReason = (err: unknown, reason: string): err is DomainError =>
  err instanceof DomainError && err.reasonCode === reason;

/** A backing service's answer, or null when it answered `not_found` (a read of something that may not exist). */
export async function nullIfNotFound<T>(answer: Promise<T>): Promise<T | null> {
  try {
    return await answer;
  } catch (err) {
    if (isReason(err, 'not_found')) return null;
    throw err;
  }
}

export const validationError = (message: string, details?: ErrorDetail[]): DomainError =>
  commonReasons.error('validation_error', message, details);

const STATUS_DETAILS_KEY = 'grpc-status-details-bin';
const TYPE_PREFIX = 'type.googleapis.com/';
const { Status, ErrorInfo, BadRequest } = google.rpc;
const ERROR_INFO_URL = TYPE_PREFIX + ErrorInfo.$type;
const BAD_REQUEST_URL = TYPE_PREFIX + BadRequest.$type;

/** A domain error as it is, the store being away as `service_unavailable`; anything else undefined (internal). */
export function domainErrorOf(err: unknown): DomainError | undefined {
  if (err instanceof DomainError) return err;
  if (isStoreUnavailable(err))
    return commonReasons.error('service_unavailable', 'the data store is unavailable, retry shortly');
  return undefined;
}

/** Domain error → rich gRPC error. Anything else is INTERNAL with no text of its own. */
export function toGrpcError(err: unknown): Partial<ServiceError> {
  const e = domainErrorOf(err) ?? commonReasons.error('internal_error', 'internal error');
  const pack = (typeUrl: string, bytes: Uint8Array) => ({ typeUrl, value: Buffer.from(bytes) });
  const details = [
    pack(ERROR_INFO_URL, ErrorInfo.encode({ reason: e.reasonCode, domain: e.domain, metadata: {} }).finish()),
  ];
  if (e.details?.length) {
    const fieldViolations = e.details.map((d) => ({ field: d.path, description: d.message }));
    details.push(pack(BAD_REQUEST_URL, BadRequest.encode({ fieldViolations }).finish()));
  }
  const code = e.opts.grpcCode;
  const metadata = new Metadata();
  metadata.set(STATUS_DETAILS_KEY, Buffer.from(Status.encode({ code, message: e.message, details }).finish()));
  return { code, details: e.message, metadata };
}

/** A gRPC failure seen by a caller → the domain error it stands for. */
export function fromGrpcError(err: unknown): DomainError {
  const e = err as Partial<ServiceError>;
  const rich = readStatusDetails(e.metadata);
  if (rich) {
    const message = rich.info.reason === 'internal_error' ? 'internal error' : rich.message;
    return new DomainError(rich.info.reason, message, {
      domain: rich.info.domain,
      grpcCode: e.code ?? status.UNKNOWN,
      details: rich.details,
    });
  }
  switch (e.code) {
    case status.UNAVAILABLE:
      return commonReasons.error('service_unavailable', 'a backing service is unavailable, retry shortly');
    case status.DEADLINE_EXCEEDED:
      return commonReasons.error('upstream_timeout', 'a backing service did not answer in time');
    case status.CANCELLED:
      return commonReasons.error('service_unavailable', 'the call to a backing service was cancelled');
    default: {
      // A transport failure (stream reset, unreadable answer): grpc-js's text stays as the cause, for logs.
      return new DomainError('internal_error', 'internal error', {
        domain: commonReasons.domain,
        grpcCode: status.INTERNAL,
        cause: err,
      });
    }
  }
}

function readStatusDetails(
  metadata: Metadata | undefined,
): { message: string; info: google.rpc.ErrorInfo; details: ErrorDetail[] | undefined } | undefined {
  const raw = metadata?.get(STATUS_DETAILS_KEY)[0];
  if (!Buffer.isBuffer(raw)) return undefined;
  try {
    const decoded = Status.decode(raw);
    let info: google.rpc.ErrorInfo | undefined;
    let details: ErrorDetail[] | undefined;
    for (const any of decoded.details) {
      if (any.typeUrl === ERROR_INFO_URL) info = ErrorInfo.decode(any.value);
      else if (any.typeUrl === BAD_REQUEST_URL) {
        details = BadRequest.decode(any.value).fieldViolations.map((v) => ({ path: v.field, message: v.description }));
      }
    }
    return info?.reason ? { message: decoded.message, info, details } : undefined;
  } catch {
    return undefined;
  }
}
