import { declaredShapeFor, declareQueries, shapeOf } from './query-check';

const model = (collectionName: string) => ({ collection: { collectionName } }) as never;

describe('shapeOf', () => {
  it('tells fields matched exactly from bounded ones, and keeps the order asked for', () => {
    expect(
      shapeOf(
        { tenantId: 't', status: { $eq: 'a' }, startedAt: { $gte: new Date() }, campaignId: { $in: ['x'] } },
        { startedAt: -1, _id: -1 },
      ),
    ).toEqual({
      equality: ['status', 'tenantId'],
      range: ['campaignId', 'startedAt'],
      sort: [
        ['startedAt', -1],
        ['_id', -1],
      ],
    });
  });

  it('reads the sort as the driver sends it, a Map', () => {
    expect(
      shapeOf(
        { tenantId: 't' },
        new Map([
          ['startedAt', -1],
          ['_id', -1],
        ]),
      ).sort,
    ).toEqual([
      ['startedAt', -1],
      ['_id', -1],
    ]);
  });

  it('reads $and branches as the filter and $or branches as bounds', () => {
    expect(shapeOf({ $and: [{ tenantId: 't' }], $or: [{ a: 1 }, { b: 2 }] })).toEqual({
      equality: ['tenantId'],
      range: ['a', 'b'],
      sort: [],
    });
  });
});

describe('declaredShapeFor', () => {
  declareQueries(model('things'), [
    { name: 'newest', equality: ['tenantId'], sort: { createdAt: -1 }, filtered: ['deleted'] },
    { name: 'due', equality: [], range: ['dueAt'] },
  ]);

  it('finds the declared shape that covers a query, with or without its sort', () => {
    expect(declaredShapeFor('things', shapeOf({ tenantId: 't' }, { createdAt: -1 }))).toMatchObject({ name: 'newest' });
    expect(declaredShapeFor('things', shapeOf({ tenantId: 't', deleted: false }))).toMatchObject({ name: 'newest' });
    expect(declaredShapeFor('things', shapeOf({ dueAt: { $lte: new Date() } }))).toMatchObject({ name: 'due' });
  });

  it('refuses a field, an order or a collection nobody declared', () => {
    expect(declaredShapeFor('things', shapeOf({ tenantId: 't', colour: 'red' }))).toBeUndefined();
    expect(declaredShapeFor('things', shapeOf({ tenantId: 't' }, { createdAt: 1 }))).toBeUndefined();
    expect(declaredShapeFor('things', shapeOf({ tenantId: 't' }, new Map([['createdAt', 1]])))).toBeUndefined();
    expect(declaredShapeFor('others', shapeOf({ tenantId: 't' }))).toBeUndefined();
  });

  it('needs no declaration for a query the primary key bounds', () => {
    expect(declaredShapeFor('others', shapeOf({ _id: 'x', owner: 'me' }))).toBe('primary key');
    expect(declaredShapeFor('others', shapeOf({ _id: { $in: ['a', 'b'] } }))).toBe('primary key');
  });
});
