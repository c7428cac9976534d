import createClient, { type Client } from 'openapi-fetch';
import type { components, paths } from './generated/api';
import { errorOf } from './errors';
import { retryingFetch } from './retry';
import { followCalls, type CallStreamEvent, type FollowOptions } from './stream';

export type BatchLead = components['schemas']['BatchLead'];
export type BatchLeadResult = components['schemas']['BatchLeadResult'];
export type Pagination = { page: number; limit: number; total: number; totalPages: number; hasMore: boolean };

/** Where the API is when `baseUrl` is not given: what `make run` starts. */
const DEFAULT_BASE_URL = 'http://127.0.0.1:8080';

export interface VoiceApiOptions {
  /** A live (`sk_live_…`) or sandbox (`sk_sandbox_…`) key. */
  apiKey: string;
  /** Where the API is, without `/api/v1` (default `http://127.0.0.1:8080`, what `make run` starts). */
  baseUrl?: string;
  /** Tries after the first for answers worth trying again (429, 503, …; default 3). */
  maxRetries?: number;
  /** The longest wait between tries, whatever `Retry-After` says (default 30 s). */
  maxRetryDelayMs?: number;
  /** The fetch to send with (default the global one). */
  fetch?: (request: Request) => Promise<Response>;
}

/**
 * The tenant API. `api` has every endpoint of the OpenAPI document, typed (generated): paths,
 * parameters, bodies and answers. Every error answer is thrown as `VoiceApiError`; POSTs carry an
 * `Idempotency-Key` and are tried again when that is safe (see `retryingFetch`).
 *
 * ```ts
 * const vapi = new VoiceApi({ apiKey: process.env.VOICEAPI_KEY! });
 * const { balance } = await ok(vapi.api.GET('/api/v1/credits'));
 * ```
 */
export class VoiceApi {
  readonly api: Client<paths>;
  private readonly connection: { baseUrl: string; apiKey: string; send: (request: Request) => Promise<Response> };

  constructor(opts: VoiceApiOptions) {
    const send = opts.fetch ?? ((request: Request) => fetch(request));
    const baseUrl = opts.baseUrl ?? DEFAULT_BASE_URL;
    this.connection = { baseUrl, apiKey: opts.apiKey, send };
    this.api = createClient<paths>({
      baseUrl,
      headers: { authorization: `Bearer ${opts.apiKey}` },
      fetch: retryingFetch(send, { maxRetries: opts.maxRetries ?? 3, maxDelayMs: opts.maxRetryDelayMs ?? 30_000 }),
    });
    this.api.use({
      async onResponse({ response }) {
        if (response.status >= 400) throw await errorOf(response);
        return undefined;
      },
    });
  }

  /**
   * The tenant's calls live (`GET /calls/stream`, scope `calls:read`): each change as it happens,
   * reconnecting by itself from the last event, until the loop breaks or `signal` aborts.
   *
   * ```ts
   * for await (const e of vapi.followCalls({ direction: 'outbound' })) if (e.kind === 'call') console.log(e.event, e.call.id, e.call.status);
   * ```
   */
  followCalls(opts: FollowOptions = {}): AsyncGenerator<CallStreamEvent> {
    return followCalls(this.connection, opts);
  }

  /**
   * Leads in batches of up to 1,000 (`POST /leads/batch`), one after another, with results for
   * every lead in the order given (`index` counts across the batches). With `idempotencyKey`, each
   * batch carries `<key>:<n>`, so sending the same list again with the same key stores nothing twice;
   * give leads an `externalId` and a sync sent again is harmless with or without a key.
   */
  async batchLeads(input: {
    leads: readonly BatchLead[];
    campaignId?: string;
    idempotencyKey?: string;
    batchSize?: number;
  }): Promise<{ accepted: number; refused: number; results: BatchLeadResult[] }> {
    const size = Math.min(1_000, Math.max(1, input.batchSize ?? 1_000));
    const results: BatchLeadResult[] = [];
    for (let from = 0; from < input.leads.length; from += size) {
      const leads = input.leads.slice(from, from + size);
      const answer = await ok(
        this.api.POST('/api/v1/leads/batch', {
          body: { ...(input.campaignId !== undefined && { campaignId: input.campaignId }), leads },
          ...(input.idempotencyKey !== undefined && {
            headers: { 'idempotency-key': `${input.idempotencyKey}:${from / size}` },
          }),
        }),
      );
      results.push(...answer.results.map((r) => ({ ...r, index: r.index + from })));
    }
    const refused = results.filter((r) => r.status === 'refused').length;
    return { accepted: results.length - refused, refused, results };
  }
}

/** The answer's body. Error answers never get here: the client threw them as `VoiceApiError`. */
export async function ok<T>(call: Promise<{ data?: T; response: Response }>): Promise<T> {
  const { data, response } = await call;
  if (data === undefined && response.status !== 204) throw new Error(`answer ${response.status} without a body`);
  return data as T;
}

/**
 * Every item of a list, page after page (`page`, `limit` ≤ 100, `pagination.hasMore`):
 *
 * ```ts
 * for await (const contact of paginate('contacts', (page) => vapi.api.GET('/api/v1/campaigns/{id}/contacts', { params: { path: { id }, query: { page, limit: 100 } } }))) …
 * ```
 */
export async function* paginate<K extends string, Item>(
  key: K,
  fetchPage: (
    page: number,
  ) => Promise<{ data?: { [k in K]: Item[] } & { pagination: Pagination }; response: Response }>,
): AsyncGenerator<Item> {
  for (let page = 1; ; page++) {
    const body = await ok(fetchPage(page));
    yield* body[key];
    if (!body.pagination.hasMore) return;
  }
}
