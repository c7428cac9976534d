import { defineReasons, grpcStatus } from '@voiceapi/kit';

/** What the leads service refuses, beyond the kit's common reasons; the gateway maps each to HTTP. */
export const leadsReasons = defineReasons('leads.voiceapi', {
  // The campaign is unknown or another tenant's.
  campaign_not_found: grpcStatus.FAILED_PRECONDITION,
  // The campaign exists but is not running (a draft, paused or completed).
  campaign_not_running: grpcStatus.FAILED_PRECONDITION,
  // The call channel without `consent.outboundCall: true`.
  consent_required: grpcStatus.FAILED_PRECONDITION,
  // The number is on the tenant's or the platform's do-not-call list (details say which).
  do_not_call: grpcStatus.FAILED_PRECONDITION,
  // `POST /events` with an event type no route maps.
  event_route_not_found: grpcStatus.FAILED_PRECONDITION,
  // A live call lead whose wallet cannot cover one call's hold now.
  insufficient_credits: grpcStatus.FAILED_PRECONDITION,
});
