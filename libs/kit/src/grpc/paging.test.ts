import { DomainError } from '../errors';
import { pageAsked } from './paging';

describe('pageAsked', () => {
  it('gives unset fields (proto3 zeros, or no page at all) the documented defaults', () => {
    expect(pageAsked(undefined)).toEqual({ page: 1, limit: 25 });
    expect(pageAsked({ page: 0, limit: 0 })).toEqual({ page: 1, limit: 25 });
    expect(pageAsked({ page: 3 }, { defaultLimit: 100, maxLimit: 500 })).toEqual({ page: 3, limit: 100 });
  });

  it('keeps a page in range as asked', () => {
    expect(pageAsked({ page: 7, limit: 100 })).toEqual({ page: 7, limit: 100 });
    expect(pageAsked({ page: 1, limit: 1 })).toEqual({ page: 1, limit: 1 });
  });

  it.each([
    [{ page: -1, limit: 10 }, ['page']],
    [{ page: 1, limit: 101 }, ['limit']],
    [{ page: 1, limit: -5 }, ['limit']],
    [{ page: 1.5, limit: 1_000 }, ['page', 'limit']],
  ])('refuses %j as a validation error naming %j, instead of answering another page', (asked, paths) => {
    let thrown: unknown;
    try {
      pageAsked(asked);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(DomainError);
    expect((thrown as DomainError).reasonCode).toBe('validation_error');
    expect((thrown as DomainError).opts.details?.map((d) => d.path)).toEqual(paths);
  });

  it('takes a list-specific maximum', () => {
    expect(pageAsked({ limit: 500 }, { maxLimit: 500 })).toEqual({ page: 1, limit: 500 });
    expect(() => pageAsked({ limit: 501 }, { maxLimit: 500 })).toThrow('limit 1–500');
  });
});
