import { defineReasons, grpcStatus } from '@voiceapi/kit';

/** What the agents service refuses, beyond the kit's common reasons; the gateway maps each to HTTP. */
export const agentsReasons = defineReasons('agents.voiceapi', {
  // The number (by phoneNumber or phoneNumberId) is not one the tenant owns.
  phone_not_owned: grpcStatus.FAILED_PRECONDITION,
  // companyId is unknown or another tenant's.
  company_not_found: grpcStatus.FAILED_PRECONDITION,
  // A selected knowledge document is unknown or another tenant's.
  knowledge_document_not_found: grpcStatus.FAILED_PRECONDITION,
  // Activation while the script is not ready.
  script_not_ready: grpcStatus.FAILED_PRECONDITION,
  // One number has one appointment scope: another agent on the number has a different one.
  phone_scope_conflict: grpcStatus.ALREADY_EXISTS,
  // A custom-API call on an agent without a custom API address.
  custom_api_not_configured: grpcStatus.FAILED_PRECONDITION,
  // A custom API address the platform may not call (scheme, credentials, internal address).
  url_not_allowed: grpcStatus.FAILED_PRECONDITION,
  // The tenant's API failed, timed out, answered too much or not what the contract says.
  custom_api_error: grpcStatus.FAILED_PRECONDITION,
});
