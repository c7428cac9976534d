import { defineReasons, grpcStatus } from '@voiceapi/kit';

/** What the telephony service refuses, beyond the kit's common reasons; the gateway maps each to HTTP. */
export const telephonyReasons = defineReasons('telephony.voiceapi', {
  // A purchase of a number the pool does not offer.
  number_not_found: grpcStatus.FAILED_PRECONDITION,
  // A purchase or assignment of a number some tenant (this one included) already owns.
  number_already_owned: grpcStatus.ALREADY_EXISTS,
  // The wallet cannot cover a number's monthly credits.
  insufficient_credits: grpcStatus.FAILED_PRECONDITION,
  // A recording token that was forged, truncated or altered.
  recording_link_invalid: grpcStatus.PERMISSION_DENIED,
  // A recording token past its expiry.
  recording_link_expired: grpcStatus.FAILED_PRECONDITION,
});
