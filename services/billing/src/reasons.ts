import { defineReasons, grpcStatus } from '@voiceapi/kit';

/** What billing refuses, beyond the kit's common reasons; the gateway maps each to HTTP. */
export const billingReasons = defineReasons('billing.voiceapi', {
  // The available balance (balance − held) cannot cover the debit or hold.
  insufficient_credits: grpcStatus.FAILED_PRECONDITION,
  // The reference (or call) was posted before with another amount or type.
  reference_conflict: grpcStatus.ALREADY_EXISTS,
  // A spending call made with a sandbox key: callers skip the debit instead.
  sandbox_not_billable: grpcStatus.FAILED_PRECONDITION,
  // The wallet kept changing under this request (other replicas): retry.
  wallet_busy: grpcStatus.ABORTED,
});
