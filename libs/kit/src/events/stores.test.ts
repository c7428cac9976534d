import { unservedShapes } from '../../test/unserved-shapes';
import { outboxQueryShapes, outboxSchema } from './outbox';

describe('event stores', () => {
  it('have an index for every query they run on MongoDB 7', () => {
    expect(unservedShapes(outboxSchema, outboxQueryShapes)).toEqual([]);
  });
});
