export {
  VoiceApi,
  ok,
  paginate,
  type BatchLead,
  type BatchLeadResult,
  type Pagination,
  type VoiceApiOptions,
} from './client';
export { VoiceApiError, type ErrorBody } from './errors';
export { retryingFetch, type RetryOptions } from './retry';
export { type CallStreamEvent, type CallSummary, type FollowOptions } from './stream';
export { verifyWebhook, type WebhookEvent } from './webhooks';
export type { components, paths } from './generated/api';
