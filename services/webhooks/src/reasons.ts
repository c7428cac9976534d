import { contractReasons, grpcStatus } from '@voiceapi/kit/errors';
import { voiceapi } from '@voiceapi/proto';

/**
 * What the webhooks service refuses, beyond the common reasons: the codes and what each means are the contract's
 * (proto/voiceapi/webhooks/v1/reasons.proto); here, the gRPC status each travels under. The
 * gateway maps each to HTTP.
 */
export const webhooksReasons = contractReasons('webhooks.voiceapi', voiceapi.webhooks.v1.WebhooksReason, {
  url_not_allowed: grpcStatus.FAILED_PRECONDITION,
});
