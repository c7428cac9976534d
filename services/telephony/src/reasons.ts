import { contractReasons, grpcStatus } from '@voiceapi/kit';
import { voiceapi } from '@voiceapi/proto';

/**
 * What the telephony service refuses, beyond the common reasons: the codes and what each means are the contract's
 * (proto/voiceapi/telephony/v1/reasons.proto); here, the gRPC status each travels under. The
 * gateway maps each to HTTP.
 */
export const telephonyReasons = contractReasons('telephony.voiceapi', voiceapi.telephony.v1.TelephonyReason, {
  number_not_found: grpcStatus.FAILED_PRECONDITION,
  number_already_owned: grpcStatus.ALREADY_EXISTS,
  insufficient_credits: grpcStatus.FAILED_PRECONDITION,
  recording_link_invalid: grpcStatus.PERMISSION_DENIED,
  recording_link_expired: grpcStatus.FAILED_PRECONDITION,
});
