import { Schema } from 'mongoose';
import { unservedShapes } from '../../test/unserved-shapes';

const schemaWith = (...indexes: Record<string, 1 | -1>[]) => {
  const s = new Schema({ tenantId: String, status: String, createdAt: Date, campaignId: String });
  for (const i of indexes) s.index(i);
  return s;
};

describe('unservedShapes', () => {
  const list = { name: 'list', equality: ['tenantId', 'status'], sort: { createdAt: -1 } } as const;

  it('accepts an index with the equality fields first (in any order), then the sort', () => {
    expect(unservedShapes(schemaWith({ status: 1, tenantId: 1, createdAt: -1 }), [list])).toEqual([]);
  });

  it('accepts an index walked backwards for the sort', () => {
    expect(unservedShapes(schemaWith({ tenantId: 1, status: 1, createdAt: 1 }), [list])).toEqual([]);
  });

  it('refuses an index that puts the sort before an equality field', () => {
    expect(unservedShapes(schemaWith({ tenantId: 1, createdAt: -1, status: 1 }), [list])).toEqual([
      expect.stringMatching(/^list:/),
    ]);
  });

  it('refuses a sort whose fields need different directions than the index gives', () => {
    const shape = { name: 'mixed', equality: ['tenantId'], sort: { createdAt: -1, campaignId: 1 } } as const;
    expect(unservedShapes(schemaWith({ tenantId: 1, createdAt: -1, campaignId: -1 }), [shape])).toHaveLength(1);
    expect(unservedShapes(schemaWith({ tenantId: 1, createdAt: -1, campaignId: 1 }), [shape])).toEqual([]);
  });

  it('wants range fields after the sort', () => {
    const shape = { name: 'window', equality: ['tenantId'], sort: { createdAt: -1 }, range: ['campaignId'] } as const;
    expect(unservedShapes(schemaWith({ tenantId: 1, campaignId: 1, createdAt: -1 }), [shape])).toHaveLength(1);
    expect(unservedShapes(schemaWith({ tenantId: 1, createdAt: -1, campaignId: 1 }), [shape])).toEqual([]);
  });

  it('serves a lookup by _id from the implicit index', () => {
    expect(unservedShapes(schemaWith(), [{ name: 'byId', equality: ['_id'] }])).toEqual([]);
    // A bound on the sorted field: the sort's place in the index serves it.
    expect(
      unservedShapes(schemaWith({ createdAt: 1 }), [
        { name: 'due', equality: [], sort: { createdAt: 1 }, range: ['createdAt'] },
      ]),
    ).toEqual([]);
  });
});
