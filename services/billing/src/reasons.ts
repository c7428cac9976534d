import { contractReasons, grpcStatus } from '@voiceapi/kit/errors';
import { voiceapi } from '@voiceapi/proto';

/**
 * What billing refuses, beyond the common reasons: the codes and what each means are the contract's
 * (proto/voiceapi/billing/v1/reasons.proto); here, the gRPC status each travels under. The
 * gateway maps each to HTTP.
 */
export const billingReasons = contractReasons('billing.voiceapi', voiceapi.billing.v1.BillingReason, {
  insufficient_credits: grpcStatus.FAILED_PRECONDITION,
  reference_conflict: grpcStatus.ALREADY_EXISTS,
  sandbox_not_billable: grpcStatus.FAILED_PRECONDITION,
  wallet_busy: grpcStatus.ABORTED,
});
