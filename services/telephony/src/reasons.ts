import { contractReasons, grpcStatus } from '@voiceapi/kit/errors';
import { voiceapi } from '@voiceapi/proto';

/** Telephony's refusals (contract: proto/voiceapi/telephony/v1/reasons.proto) and the gRPC status of each. */
export const telephonyReasons = contractReasons('telephony.voiceapi', voiceapi.telephony.v1.TelephonyReason, {
  number_not_found: grpcStatus.FAILED_PRECONDITION,
  number_already_owned: grpcStatus.ALREADY_EXISTS,
  insufficient_credits: grpcStatus.FAILED_PRECONDITION,
  recording_link_invalid: grpcStatus.PERMISSION_DENIED,
  recording_link_expired: grpcStatus.FAILED_PRECONDITION,
});
