import { unservedShapes } from '@voiceapi/kit';
import { unsettledQueryShapes, unsettledSchema } from './call-store';
import { entryQueryShapes, entrySchema } from './wallet-store';

describe('wallet store indexes', () => {
  it('serves every ledger query with an index on MongoDB 7', () => {
    expect(unservedShapes(entrySchema, entryQueryShapes)).toEqual([]);
    expect(unservedShapes(unsettledSchema, unsettledQueryShapes)).toEqual([]);
  });
});
