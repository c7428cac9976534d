import { defineReasons, grpcStatus } from '@voiceapi/kit';

/** What the webhooks service refuses, beyond the kit's common reasons; the gateway maps each to HTTP. */
export const webhooksReasons = defineReasons('webhooks.voiceapi', {
  // An endpoint address the platform may not call (scheme, credentials, a literal internal address).
  url_not_allowed: grpcStatus.FAILED_PRECONDITION,
});
