// Helpers of the telephony area's route groups: the page of a paged answer, as the tenant API shows it.
import { pagination } from '../../http/pagination';

/** The `pagination` of an answer, from the page asked for and the one telephony answered. */
export const page = (query: { page: number; limit: number }, p: { total?: number; hasMore?: boolean } | undefined) =>
  pagination({ page: query.page, limit: query.limit, total: p?.total ?? 0, hasMore: p?.hasMore ?? false });
