import { validationError } from '../errors';

/** The page a list was asked for, checked: what a use case and its store are given. */
export interface PageAsked {
  page: number;
  limit: number;
}

/**
 * Every list's paging as it arrives over gRPC: proto3 sends an unset field as 0, so 0 takes the default the API
 * documents (page 1, limit 25); past the range (page ≥ 1, limit 1–`maxLimit`, 100 unless a list says otherwise) is
 * the caller's error, never a clamp that answers another page than the one asked. The gateway checks the same range
 * on the tenant's query (services/gateway/src/http/pagination.ts); this is the check for every other caller.
 */
export function pageAsked(
  asked: { page?: number; limit?: number } | undefined,
  { defaultLimit = 25, maxLimit = 100 }: { defaultLimit?: number; maxLimit?: number } = {},
): PageAsked {
  const page = asked?.page || 1;
  const limit = asked?.limit || defaultLimit;
  const details = [
    ...(Number.isInteger(page) && page >= 1 ? [] : [{ path: 'page', message: 'must be an integer ≥ 1' }]),
    ...(Number.isInteger(limit) && limit >= 1 && limit <= maxLimit
      ? []
      : [{ path: 'limit', message: `must be an integer from 1 to ${maxLimit}` }]),
  ];
  if (details.length) throw validationError(`page must be ≥ 1 and limit 1–${maxLimit}`, details);
  return { page, limit };
}
