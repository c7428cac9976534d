// The lead ingest routes: `POST /leads` (one lead) and `POST /leads/batch` (up to 1,000).
import { createHash } from 'node:crypto';
import type { ServiceClients } from '../../clients';
import { withBodyFields } from '../../http/errors';
import { defineRoute } from '../../http/route';
import { z } from '../../http/zod';
import { batchResultJson, leadAcceptedJson, leadInput } from './mappers';
import {
  BATCH_BODY_LIMIT_BYTES,
  BatchLead,
  BatchLeadResult,
  Lead,
  LeadAccepted,
  LeadBatch,
  LeadBatchFrame,
  LeadBatchResult,
} from './schemas';
import { LEAD_RULES } from './shared';

type Json<S extends z.ZodType> = z.infer<S>;

/** Leads pushed to running API campaigns, one at a time or in batches. */
export function leadIngestRoutes(clients: ServiceClients) {
  const tag = 'Leads';
  return [
    defineRoute({
      method: 'post',
      path: '/leads',
      tag,
      summary: 'Push a lead to a running API campaign',
      description: LEAD_RULES,
      operationId: 'createLead',
      scopes: ['leads:write'],
      body: Lead,
      responses: {
        202: { description: 'Accepted: the contact is recorded; its dial or messages follow', schema: LeadAccepted },
      },
      errors: {
        402: 'A live `call` lead and the wallet cannot cover one call’s hold (`insufficient_credits`)',
        409: 'The campaign is not running (`campaign_not_running`)',
        422: '`campaign_not_found`, `consent_required` or `do_not_call` (details name the list)',
      },
      handler: async ({ body }, { call }) => {
        const { campaignId, ...lead } = body;
        const res = await withBodyFields(clients.leads.ingestLead({ campaignId, lead: leadInput(lead) }, call));
        return { status: 202, body: leadAcceptedJson(res) };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/leads/batch',
      tag,
      summary: 'Push up to 1,000 leads in one request',
      description:
        'Each lead is decided on its own, by the rules of `POST /leads`, and answered in its own result, in the order sent: one lead’s refusal never ' +
        'refuses the others, and a lead that does not fit `BatchLead` is refused in its result (`validation_error`, `details` naming `body.leads.<index>.<field>`). ' +
        'A lead without `campaignId` takes the batch’s. `externalId` makes sending a lead again harmless: a lead whose `externalId` was accepted before ' +
        '(per tenant and key mode) is not ingested again, and its result repeats the first one’s with `duplicate: true`; a second lead with the same ' +
        '`externalId` in one batch is refused. The whole request is refused only when it is not a batch: `leads` missing, empty or over 1,000 (400), ' +
        `or a body over 2 MB (413). It counts as one request against the rate limit. With \`Idempotency-Key\` a retry answers the first result, and a retry ` +
        'after a failure part-way stores no lead twice.',
      operationId: 'createLeadBatch',
      scopes: ['leads:write'],
      body: LeadBatchFrame,
      documentedBody: LeadBatch,
      bodyLimitBytes: BATCH_BODY_LIMIT_BYTES,
      responses: { 200: { description: 'A result per lead, in the order sent', schema: LeadBatchResult } },
      handler: async ({ body }, { call, requestId, idempotencyKey }) => {
        const results = new Array<Json<typeof BatchLeadResult>>(body.leads.length);
        const externalIds: (string | undefined)[] = [];
        const leads: { index: number; campaignId: string; externalId?: string; lead: ReturnType<typeof leadInput> }[] =
          [];
        body.leads.forEach((raw, index) => {
          const parsed = BatchLead.safeParse(raw);
          const externalId = parsed.success ? parsed.data.externalId : undefined;
          externalIds[index] = externalId;
          if (!parsed.success) {
            const details = parsed.error.issues.map((i) => ({
              path: ['body', 'leads', index, ...i.path].join('.'),
              message: i.message,
            }));
            results[index] = {
              index,
              status: 'refused',
              reasonCode: 'validation_error',
              error: `invalid lead: ${details[0]!.path} ${details[0]!.message}`,
              details,
            };
            return;
          }
          const { campaignId = body.campaignId, externalId: _x, ...lead } = parsed.data;
          if (campaignId === undefined) {
            const path = `body.leads.${index}.campaignId`;
            results[index] = {
              index,
              status: 'refused',
              reasonCode: 'validation_error',
              error: `invalid lead: ${path} is required when the batch names no campaignId`,
              details: [{ path, message: 'required when the batch names no campaignId' }],
            };
            return;
          }
          leads.push({ index, campaignId, ...(externalId !== undefined && { externalId }), lead: leadInput(lead) });
        });
        if (leads.length > 0) {
          // The same on every try of this request: with an Idempotency-Key, also on the client's retries.
          const batchKey =
            idempotencyKey !== undefined ? createHash('sha256').update(idempotencyKey).digest('hex') : requestId;
          const res = await clients.leads.ingestLeadBatch({ batchKey, leads }, call);
          for (const r of res.results) results[r.index] = batchResultJson(r, externalIds[r.index]);
        }
        const refused = results.filter((r) => r.status === 'refused').length;
        return { status: 200, body: { accepted: results.length - refused, refused, results } };
      },
    }),
  ];
}
