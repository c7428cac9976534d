import { unservedShapes } from '@voiceapi/kit';
import { companyQueryShapes, companySchema } from './company-store';

describe('companies store', () => {
  it('has an index for every query it runs (equality, then sort, then range) on MongoDB 7', () => {
    expect(unservedShapes(companySchema, companyQueryShapes)).toEqual([]);
  });
});
