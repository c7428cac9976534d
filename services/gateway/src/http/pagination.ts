import { PLAIN_INTEGER, queryInt, z } from './zod';

/** Deeper pages are refused: an offset that large is a client bug, and it must fit the contract's int32. */
export const MAX_PAGE = 100_000;

/** `page` 1–MAX_PAGE (default 1) and `limit` 1–100 (default 25), as every list takes them. */
export const PageQuery = z.object({
  page: queryInt(1, MAX_PAGE)
    .default(1)
    .openapi({ description: `Page number, from 1 to ${MAX_PAGE}; ${PLAIN_INTEGER}`, example: 1 }),
  limit: queryInt(1, 100)
    .default(25)
    .openapi({ description: `Page size, 1 to 100; ${PLAIN_INTEGER}`, example: 25 }),
});

export const Pagination = z
  .object({
    page: z.number().int(),
    limit: z.number().int(),
    total: z
      .number()
      .int()
      .openapi({ description: 'Matching rows: exact up to 10,000; at 10,000 it means at least that many' }),
    totalPages: z.number().int(),
    hasMore: z.boolean().openapi({ description: 'Whether another page follows (always exact)' }),
  })
  .openapi('Pagination');

/**
 * The pagination object of a list's answer: the page the tenant asked for and what the service answered of it
 * (`hasMore` is exact even when `total` is capped; a service that answered no page info counts as an empty page).
 */
export function pagination(
  asked: { page: number; limit: number },
  answered: { total?: number; hasMore?: boolean } | undefined,
): z.infer<typeof Pagination> {
  const total = answered?.total ?? 0;
  return {
    page: asked.page,
    limit: asked.limit,
    total,
    totalPages: Math.ceil(total / asked.limit),
    hasMore: answered?.hasMore ?? false,
  };
}

/** A 24-hex id; anything else is refused with 400 before a service is called. */
export const IdParam = z.object({
  id: z
    .string()
    .regex(/^[a-fA-F0-9]{24}$/, 'must be a 24-character hex id')
    .openapi({ example: '665f1c2b9d3e4a0012345678' }),
});
