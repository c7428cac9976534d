import { defineReasons, grpcStatus, type ReasonCodeOf } from '@voiceapi/kit/errors';
import { voiceapi } from '@voiceapi/proto';

/** The reason enums of the contract (proto/voiceapi/<service>/v1/reasons.proto): every code a backing service may answer with. */
export const CONTRACT_REASONS = {
  common: voiceapi.common.v1.CommonReason,
  agents: voiceapi.agents.v1.AgentsReason,
  billing: voiceapi.billing.v1.BillingReason,
  knowledge: voiceapi.knowledge.v1.KnowledgeReason,
  leads: voiceapi.leads.v1.LeadsReason,
  telephony: voiceapi.telephony.v1.TelephonyReason,
  webhooks: voiceapi.webhooks.v1.WebhooksReason,
} as const;
type ContractReason = {
  [S in keyof typeof CONTRACT_REASONS]: ReasonCodeOf<(typeof CONTRACT_REASONS)[S]>;
}[keyof typeof CONTRACT_REASONS];

/**
 * The one table from a reason code to the HTTP status tenants and operators see
 * (../shared/guide/api-decisions.md, "Errors"). The contract defines the services' reasons and
 * they raise them; only the gateway knows what they mean in HTTP. The table must name every code
 * of the contract (the compiler says which is missing); a reason that is not in it (a service
 * built from a newer contract) is answered as a logged 500 `internal_error`, so a service can
 * never invent a status the contract does not promise.
 */
export const HTTP_STATUS = {
  // Shared by every process (the kit's common reasons).
  validation_error: 400,
  unauthorized: 401,
  not_found: 404,
  conflict: 409,
  internal_error: 500,
  service_unavailable: 503,
  upstream_timeout: 504,
  // The gateway's own.
  forbidden: 403,
  method_not_allowed: 405,
  idempotency_in_progress: 409,
  payload_too_large: 413,
  uri_too_long: 414,
  unsupported_media_type: 415,
  idempotency_key_reused: 422,
  rate_limited: 429,
  headers_too_large: 431,
  api_globally_disabled: 503,
  // Raised by the owning services.
  insufficient_credits: 402,
  reference_conflict: 409,
  sandbox_not_billable: 409,
  wallet_busy: 503,
  script_not_ready: 409,
  phone_scope_conflict: 409,
  campaign_not_running: 409,
  company_not_found: 422,
  knowledge_document_not_found: 422,
  phone_not_owned: 422,
  campaign_not_found: 422,
  consent_required: 422,
  do_not_call: 422,
  event_route_not_found: 422,
  number_not_found: 422,
  number_already_owned: 409,
  recording_link_invalid: 403,
  recording_link_expired: 410,
  document_unreadable: 422,
  custom_api_not_configured: 422,
  url_not_allowed: 422,
  custom_api_error: 502,
} as const satisfies Record<ContractReason, number> & Record<string, number>;

export type HttpReason = keyof typeof HTTP_STATUS;

/** Reasons worth retrying shortly: their answers carry `Retry-After` (seconds). */
export const RETRY_AFTER_SECONDS: Partial<Record<HttpReason, number>> = {
  service_unavailable: 1,
  upstream_timeout: 1,
  // Billing: too many concurrent changes to one wallet; the next attempt normally goes through.
  wallet_busy: 1,
  // A stream over its key's cap: one of the key's streams may close any moment.
  rate_limited: 1,
};

export function httpStatusOf(reason: string): number | undefined {
  return Object.prototype.hasOwnProperty.call(HTTP_STATUS, reason) ? HTTP_STATUS[reason as HttpReason] : undefined;
}

/** Reasons the gateway raises itself (the gRPC status is unused: they never leave this process). */
export const gatewayReasons = defineReasons('gateway.voiceapi', {
  idempotency_in_progress: grpcStatus.ABORTED,
  idempotency_key_reused: grpcStatus.FAILED_PRECONDITION,
  payload_too_large: grpcStatus.INVALID_ARGUMENT,
  unsupported_media_type: grpcStatus.INVALID_ARGUMENT,
  // An operator's campaign names a number the tenant does not own (agents refuse their own case).
  phone_not_owned: grpcStatus.FAILED_PRECONDITION,
  // A limit the gateway keeps besides the request rate: open call streams per key.
  rate_limited: grpcStatus.RESOURCE_EXHAUSTED,
});
