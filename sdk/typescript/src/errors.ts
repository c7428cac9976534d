/** The API's error body: `{ error, reasonCode, missing?, details? }` on every refusal. */
export interface ErrorBody {
  error: string;
  reasonCode: string;
  missing?: string[];
  details?: { path: string; message: string }[];
}

/**
 * An answer of 400 or more, thrown by every call of the client: `reasonCode` is the API's
 * machine-readable reason (`validation_error`, `insufficient_credits`, `do_not_call`, …), stable
 * across releases; branch on it, not on `message`.
 */
export class VoiceApiError extends Error {
  override name = 'VoiceApiError';
  readonly status: number;
  readonly reasonCode: string;
  /** Scopes the key lacks (403). */
  readonly missing: string[];
  /** Field problems (400), each named from the request (`body.leads.3.phone`). */
  readonly details: { path: string; message: string }[];
  /** The answer's `X-Request-Id`, for support. */
  readonly requestId: string | undefined;
  /** Seconds the API asked to wait before trying again (429, 503). */
  readonly retryAfterSeconds: number | undefined;

  constructor(status: number, body: Partial<ErrorBody> | undefined, headers: Headers) {
    super(body?.error ?? `HTTP ${status}`);
    this.status = status;
    this.reasonCode = body?.reasonCode ?? (status >= 500 ? 'internal_error' : 'unknown');
    this.missing = body?.missing ?? [];
    this.details = body?.details ?? [];
    this.requestId = headers.get('x-request-id') ?? undefined;
    const retryAfter = Number(headers.get('retry-after'));
    this.retryAfterSeconds = headers.has('retry-after') && Number.isFinite(retryAfter) ? retryAfter : undefined;
  }
}

/** The error of an answer that is not a success. */
export async function errorOf(response: Response): Promise<VoiceApiError> {
  let body: Partial<ErrorBody> | undefined;
  try {
    body = (await response.clone().json()) as Partial<ErrorBody>;
  } catch {
    body = undefined; // not JSON: a proxy's page, say; the status still says what happened
  }
  return new VoiceApiError(response.status, body, response.headers);
}
