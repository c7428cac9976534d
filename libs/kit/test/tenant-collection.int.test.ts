// Over 300 lines because one service's integration cases share its started store, Kafka and service per file.
import { randomBytes } from 'node:crypto';
import mongoose, { Schema, Types, type Connection } from 'mongoose';
import {
  BLOB_PART_BYTES,
  BlobStore,
  ChangeFeed,
  createLogger,
  objectIds,
  platformModel,
  requireTenant,
  stringIds,
  TenantCollection,
  TenantKeyed,
} from '../src';

interface NoteDoc {
  _id: Types.ObjectId;
  tenantId: string;
  text: string;
  createdAt: Date;
}

// The tenant-scoped collection base against the real MongoDB-compatible server.
describe('TenantCollection', () => {
  let conn: Connection;
  let notes: TenantCollection<NoteDoc>;
  const a = requireTenant({ tenantId: 'tenant-a', keyMode: 'live' });
  const b = requireTenant({ tenantId: 'tenant-b', keyMode: 'sandbox' });
  const newest = { createdAt: -1, _id: -1 } as const;

  beforeAll(async () => {
    conn = await mongoose
      .createConnection(process.env.MONGO_URL!, {
        dbName: `tc_${randomBytes(4).toString('hex')}`,
        monitorCommands: true,
      })
      .asPromise();
    const schema = new Schema<NoteDoc>(
      { tenantId: { type: String, required: true }, text: String, createdAt: Date },
      { versionKey: false },
    );
    schema.index({ tenantId: 1, createdAt: -1, _id: -1 });
    notes = new TenantCollection(conn.model<NoteDoc>('Note', schema), objectIds, [
      { name: 'newest', equality: ['tenantId'], sort: newest },
    ]);
  });
  afterAll(() => conn.close());

  const add = (scope: typeof a, text: string, at = Date.now()) =>
    notes.insert(scope, { text, createdAt: new Date(at) });

  it("stamps the caller's tenant on insert and finds its own documents by id", async () => {
    const note = await add(a, 'mine');
    expect(note.tenantId).toBe('tenant-a');
    expect((await notes.findById(a, note._id.toString()))?.text).toBe('mine');
  });

  it("treats another tenant's document as absent for every operation, and leaves it untouched", async () => {
    const note = await add(a, 'private');
    const id = note._id.toString();
    expect(await notes.findById(b, id)).toBeNull();
    expect(await notes.updateById(b, id, { $set: { text: 'stolen' } })).toBeNull();
    expect(await notes.deleteById(b, id)).toBe(false);
    expect((await notes.find(b, {})).map((n) => n.text)).not.toContain('private');
    expect(await notes.findOne(b, { text: 'private' })).toBeNull();
    expect((await notes.findById(a, id))?.text).toBe('private');
  });

  it("updates and deletes the tenant's own document", async () => {
    const note = await add(a, 'draft');
    expect((await notes.updateById(a, note._id.toString(), { $set: { text: 'final' } }))?.text).toBe('final');
    expect(await notes.deleteById(a, note._id.toString())).toBe(true);
    expect(await notes.findById(a, note._id.toString())).toBeNull();
  });

  it('answers ids that cannot be ids as absent, without a query error', async () => {
    expect(await notes.findById(a, 'not-an-id')).toBeNull();
    expect(await notes.deleteById(a, '')).toBe(false);
  });

  it('refuses an update that would move a document to another tenant', async () => {
    const note = await add(a, 'stays');
    await expect(notes.updateById(a, note._id.toString(), { $set: { tenantId: 'tenant-b' } })).rejects.toThrow(
      /tenant never changes/,
    );
    await expect(notes.updateById(a, note._id.toString(), { tenantId: 'tenant-b' })).rejects.toThrow(
      /tenant never changes/,
    );
    await expect(notes.updateById(a, note._id.toString(), { $rename: { text: 'tenantId' } })).rejects.toThrow(
      /tenant never changes/,
    );
    await expect(notes.updateById(a, note._id.toString(), { $unset: { tenantId: 1 } })).rejects.toThrow(
      /tenant never changes/,
    );
    expect((await notes.findById(a, note._id.toString()))?.tenantId).toBe('tenant-a');
  });

  it('pages newest first with an exact total and hasMore, counting only when more rows follow', async () => {
    const scope = requireTenant({ tenantId: `pager-${randomBytes(3).toString('hex')}`, keyMode: 'live' });
    const t0 = Date.UTC(2026, 0, 1);
    for (let i = 0; i < 7; i++) await add(scope, `n${i}`, t0 + i * 1000);
    const first = await notes.page(scope, {}, { sort: newest, page: 1, limit: 3 });
    expect({ texts: first.items.map((n) => n.text), total: first.total, hasMore: first.hasMore }).toEqual({
      texts: ['n6', 'n5', 'n4'],
      total: 7,
      hasMore: true,
    });
    const last = await notes.page(scope, {}, { sort: newest, page: 3, limit: 3 });
    expect({ texts: last.items.map((n) => n.text), total: last.total, hasMore: last.hasMore }).toEqual({
      texts: ['n0'],
      total: 7,
      hasMore: false,
    });
    const beyond = await notes.page(scope, {}, { sort: newest, page: 9, limit: 3 });
    expect({ n: beyond.items.length, total: beyond.total, hasMore: beyond.hasMore }).toEqual({
      n: 0,
      total: 7,
      hasMore: false,
    });
  });

  it('reaches across tenants only through the named escape hatch, which wants a reason', async () => {
    const note = await add(b, 'routed by number');
    expect(() => notes.crossTenant('')).toThrow(/say why/);
    const hatch = notes.crossTenant('an inbound call is routed by the number it dialled, before its tenant is known');
    expect((await hatch.findById(note._id.toString()))?.tenantId).toBe('tenant-b');
  });

  it("upserts, inserts only what is new, and updates many of the tenant's own documents only", async () => {
    interface CounterDoc {
      _id: string;
      tenantId: string;
      n: number;
    }
    const schema = new Schema<CounterDoc>(
      { _id: String, tenantId: { type: String, required: true }, n: Number },
      { versionKey: false },
    );
    const counters = new TenantCollection(conn.model<CounterDoc>('Counter', schema), stringIds, []);
    await counters.upsertById(a, 'a:1', { $inc: { n: 1 } });
    await Promise.all([
      counters.upsertById(a, 'a:2', { $inc: { n: 1 } }),
      counters.upsertById(a, 'a:2', { $inc: { n: 1 } }),
    ]);
    expect((await counters.findById(a, 'a:1'))?.n).toBe(1);
    // Two first writes at once: both counted, one document.
    expect((await counters.findById(a, 'a:2'))?.n).toBe(2);
    // Another tenant's upsert of the same id cannot reach it (its insert collides on `_id`).
    await expect(counters.upsertById(b, 'a:1', { $inc: { n: 10 } })).rejects.toThrow();
    expect((await counters.findById(a, 'a:1'))?.n).toBe(1);
    expect(
      await counters.insertNew(a, [
        { _id: 'a:1', n: 0 },
        { _id: 'a:3', n: 3 },
      ]),
    ).toEqual([0]);
    expect((await counters.findById(a, 'a:3'))?.n).toBe(3);
    expect(await counters.updateMany(b, {}, { $set: { n: 0 } })).toBe(0);
    expect(await counters.updateMany(a, {}, { $inc: { n: 1 } })).toBe(3);
    expect((await counters.find(a, {})).map((c) => c.n).sort()).toEqual([2, 3, 4]);
  });

  it('upserts many documents of several tenants in one write, each only under its own tenant', async () => {
    interface MarkDoc {
      _id: string;
      tenantId: string;
      at: number;
      seen?: number[];
    }
    const marks = new TenantCollection(
      conn.model<MarkDoc>(
        'Mark',
        new Schema<MarkDoc>({ _id: String, tenantId: String, at: Number, seen: [Number] }, { versionKey: false }),
      ),
      stringIds,
      [],
    );
    const all = marks.crossTenant('a test writes the marks of two tenants');
    await all.upsertManyById([
      { id: 'a|1', tenantId: 'tenant-a', update: { $set: { at: 1 }, $addToSet: { seen: 1 } } },
      { id: 'b|1', tenantId: 'tenant-b', update: { $set: { at: 1 } } },
    ]);
    await all.upsertManyById([
      { id: 'a|1', tenantId: 'tenant-a', update: { $set: { at: 2 }, $addToSet: { seen: { $each: [1, 2] } } } },
      { id: 'a|2', tenantId: 'tenant-a', update: { $set: { at: 2 } } },
    ]);
    expect((await marks.find(a, {})).map((m) => [m._id, m.at, m.seen]).sort()).toEqual([
      ['a|1', 2, [1, 2]],
      ['a|2', 2, []],
    ]);
    // An id another tenant holds cannot be taken over: the write fails, the document stays.
    await expect(
      all.upsertManyById([{ id: 'a|1', tenantId: 'tenant-b', update: { $set: { at: 9 } } }]),
    ).rejects.toThrow();
    expect((await marks.findById(a, 'a|1'))?.at).toBe(2);
    // Updates by id apply only under the tenant each names; an absent id is left alone.
    await all.updateManyById([
      { id: 'a|1', tenantId: 'tenant-a', update: { $set: { at: 3 } } },
      { id: 'a|2', tenantId: 'tenant-b', update: { $set: { at: 9 } } },
      { id: 'a|9', tenantId: 'tenant-a', update: { $set: { at: 9 } } },
    ]);
    expect((await marks.find(a, {})).map((m) => [m._id, m.at]).sort()).toEqual([
      ['a|1', 3],
      ['a|2', 2],
    ]);
    await expect(
      all.updateManyById([{ id: 'a|1', tenantId: 'tenant-a', update: { $set: { tenantId: 'tenant-b' } } }]),
    ).rejects.toThrow(/tenant never changes/);
  });

  it('keys one document per tenant by the scope itself (TenantKeyed)', async () => {
    interface HeadDoc {
      _id: string;
      seq: number;
    }
    const heads = new TenantKeyed(
      conn.model<HeadDoc>('Head', new Schema<HeadDoc>({ _id: String, seq: Number }, { versionKey: false })),
    );
    expect(await heads.get(a)).toBeNull();
    await heads.upsert(a, { $max: { seq: 3 } });
    await heads.upsert(a, { $max: { seq: 2 } });
    await heads.upsert(b, { $max: { seq: 7 } });
    expect({ a: (await heads.get(a))?.seq, b: (await heads.get(b))?.seq }).toEqual({ a: 3, b: 7 });
    // Reads asked at once are served together, each only its own tenant's document (or none).
    const none = requireTenant({ tenantId: 'tenant-none', keyMode: 'live' });
    const shared = await Promise.all([
      heads.getShared(a),
      heads.getShared(b),
      heads.getShared(none),
      heads.getShared(a),
    ]);
    expect(shared.map((h) => h?.seq ?? null)).toEqual([3, 7, null, 3]);
    // A conditional update: only when the document still says what was read.
    expect(await heads.update(a, { $set: { seq: 4 } }, { seq: 2 })).toBe(false);
    expect(await heads.update(a, { $set: { seq: 4 } }, { seq: 3 })).toBe(true);
    expect(() => heads.pagesAcrossTenants('')).toThrow(/say why/);
    const all: string[] = [];
    for await (const page of heads.pagesAcrossTenants('a sweep over every tenant')) all.push(...page.map((h) => h._id));
    expect(all.sort()).toEqual(['tenant-a', 'tenant-b']);
  });

  it('names why a platform collection belongs to no tenant', () => {
    const model = conn.model('Pool', new Schema({ _id: String }));
    expect(() => platformModel(model, '')).toThrow(/say why/);
    expect(platformModel(model, "the number pool is the platform's")).toBe(model);
  });

  it('batch-inserts documents as built: the tenant stamped, undefined fields left out, a duplicate refused', async () => {
    await notes.insertMany(a, [
      { text: 'one', createdAt: new Date(1) },
      { text: undefined as unknown as string, createdAt: new Date(2) },
    ]);
    const raw = await conn
      .collection('notes')
      .find({ createdAt: { $in: [new Date(1), new Date(2)] } })
      .sort({ createdAt: 1 })
      .toArray();
    expect(raw.map((d) => d.tenantId)).toEqual(['tenant-a', 'tenant-a']);
    expect(raw[1]).not.toHaveProperty('text');
    await expect(
      notes.insertMany(a, [{ _id: raw[0]!._id, text: 'again', createdAt: new Date(3) }]),
    ).rejects.toMatchObject({ code: 11000 });
  });

  /** A feed's stream is opened asynchronously: another connection writes until the first wake-up arrives (10 s at most). */
  async function writeUntilWoken(other: mongoose.Connection, seen: readonly number[]): Promise<void> {
    const started = Date.now();
    while (seen.length === 0 && Date.now() - started < 10_000) {
      await other.collection('notes').insertOne({ tenantId: 'tenant-a', text: 'elsewhere', createdAt: new Date() });
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  it('wakes a change feed when another connection writes the collection', async () => {
    const other = await mongoose.createConnection(process.env.MONGO_URL!, { dbName: conn.name }).asPromise();
    const seen: number[] = [];
    const feed = new ChangeFeed(
      [notes.changes(['insert'])],
      () => seen.push(Date.now()),
      createLogger('test', 'silent'),
    );
    try {
      feed.start();
      await writeUntilWoken(other, seen);
      expect(seen.length).toBeGreaterThan(0);
    } finally {
      await feed.stop();
      await other.close();
    }
  });

  it('serves every change feed of a database with one change stream, each woken by its own collections only', async () => {
    const other = await mongoose.createConnection(process.env.MONGO_URL!, { dbName: conn.name }).asPromise();
    // What this connection asks of the store: change streams open as an aggregate with $changeStream.
    const opened: string[] = [];
    const client = conn.getClient();
    const watchOpens = (e: { commandName: string; command: { pipeline?: Record<string, unknown>[] } }) => {
      if (e.commandName === 'aggregate' && e.command.pipeline?.[0]?.$changeStream)
        opened.push(JSON.stringify(e.command.pipeline[1]));
    };
    client.on('commandStarted', watchOpens);
    const plain = (name: string) => conn.model(name, new Schema({ n: Number }, { collection: name.toLowerCase() }));
    const [a, b] = [plain('FeedA'), plain('FeedB')];
    const woken = { notes: 0, a: 0, b: 0 };
    const log = createLogger('test', 'silent');
    const feeds = [
      new ChangeFeed([notes.changes(['insert'])], () => woken.notes++, log),
      new ChangeFeed([{ model: a, operations: ['insert'] }], () => woken.a++, log),
      new ChangeFeed([{ model: b, operations: ['update'] }], () => woken.b++, log),
    ];
    try {
      for (const f of feeds) f.start();
      await new Promise((r) => setTimeout(r, 300));
      expect(opened).toHaveLength(1); // started together: one stream for the three
      const seen: number[] = [];
      const probe = new ChangeFeed([{ model: a, operations: ['insert'] }], () => seen.push(1), log);
      probe.start(); // a feed started later: the stream is opened again, still one
      await new Promise((r) => setTimeout(r, 300));
      expect(opened).toHaveLength(2);
      Object.assign(woken, { notes: 0, a: 0, b: 0 });
      await other.collection('feeda').insertOne({ n: 1 });
      await other.collection('feedb').insertOne({ n: 1 }); // an insert: feed b watches updates only
      const until = Date.now() + 5_000;
      while ((woken.a === 0 || seen.length === 0) && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
      await new Promise((r) => setTimeout(r, 300));
      expect(woken).toEqual({ notes: 0, a: 1, b: 0 });
      expect(seen).toEqual([1]);
      await other.collection('feedb').updateOne({ n: 1 }, { $set: { n: 2 } });
      while (woken.b === 0 && Date.now() < until + 5_000) await new Promise((r) => setTimeout(r, 50));
      expect(woken.b).toBe(1);
      await probe.stop();
    } finally {
      client.off('commandStarted', watchOpens);
      for (const f of feeds) await f.stop();
      await other.close();
    }
  });

  it('inserts documents asked at once in a shared write: true for the first of an id, false for a repeat, each under its tenant', async () => {
    const ids = Array.from({ length: 5 }, () => new Types.ObjectId());
    const made = await Promise.all([
      ...ids.map((_id) => notes.insertShared(a, { _id, text: 'shared', createdAt: new Date() })),
      notes.insertShared(b, { _id: ids[0]!, text: 'a repeat under another tenant', createdAt: new Date() }),
    ]);
    expect(made).toEqual([true, true, true, true, true, false]);
    for (const _id of ids) expect((await notes.findById(a, _id.toString()))?.text).toBe('shared');
    expect(await notes.findById(b, ids[0]!.toString())).toBeNull();
  });

  it("serves reads asked at once with shared reads: each its own tenant's document, as fresh as a read of its own", async () => {
    const mine = await Promise.all(Array.from({ length: 10 }, (_, i) => add(a, `a${i}`)));
    const theirs = await add(b, 'theirs');
    const reads = await Promise.all([
      ...mine.map((n) => notes.findByIdShared(a, n._id.toString())),
      notes.findByIdShared(a, theirs._id.toString()),
      notes.findByIdShared(b, theirs._id.toString()),
      notes.findByIdShared(a, 'not-an-id'),
    ]);
    expect(reads.slice(0, 10).map((n) => n?.text)).toEqual(mine.map((n) => n.text));
    expect(reads[10]).toBeNull();
    expect(reads[11]?.text).toBe('theirs');
    expect(reads[12]).toBeNull();
    // Across tenants (a lifecycle that knows the id): each document, whoever owns it.
    const across = notes.crossTenant('the test reads both tenants');
    expect(
      (
        await Promise.all([
          across.findByIdShared(mine[1]!._id.toString()),
          across.findByIdShared(theirs._id.toString()),
        ])
      ).map((n) => n?.tenantId),
    ).toEqual(['tenant-a', 'tenant-b']);
    // A read asked after a write was acknowledged sees it, even while other reads are under way.
    const busy = Promise.all(mine.map((n) => notes.findByIdShared(a, n._id.toString())));
    await notes.updateById(a, mine[0]!._id.toString(), { $set: { text: 'changed' } });
    expect((await notes.findByIdShared(a, mine[0]!._id.toString()))?.text).toBe('changed');
    await busy;
  });

  it('writes conditional updates asked at once together, and tells each caller whether its own applied', async () => {
    interface TaskDoc {
      _id: Types.ObjectId;
      tenantId: string;
      state: string;
      note?: string;
      moves?: Record<string, string>;
    }
    const tasks = new TenantCollection(
      conn.model<TaskDoc>(
        'Task',
        new Schema<TaskDoc>(
          { tenantId: { type: String, required: true }, state: String, note: String, moves: Schema.Types.Mixed },
          { versionKey: false },
        ),
      ),
      objectIds,
      [],
    );
    const made = await Promise.all(Array.from({ length: 10 }, () => tasks.insert(a, { state: 'open', note: 'n' })));
    const start = (id: string, scope = a) =>
      tasks.updateByIdShared(
        scope,
        id,
        { $set: { state: 'started' }, $unset: { note: 1 } },
        { where: { state: 'open' }, mark: 'moves.started' },
      );
    // Two tries of each at once, and one under another tenant: exactly one applies per task.
    const tries = await Promise.all(
      made.flatMap((t) => [start(t._id.toString()), start(t._id.toString()), start(t._id.toString(), b)]),
    );
    for (let i = 0; i < made.length; i++) {
      const [x, y, other] = tries.slice(3 * i, 3 * i + 3);
      expect([x, y].filter((d) => d?.state === 'started')).toHaveLength(1);
      expect([x, y].find((d) => d !== null)?.note).toBeUndefined();
      expect(other).toBeNull();
    }
    // From a state the task has left: refused, and the caller told so.
    expect(await start(made[0]!._id.toString())).toBeNull();
    expect(await start('not-an-id')).toBeNull();
  });

  it("applies updates asked at once in one write, reading nothing back, and only to the tenant's matching documents", async () => {
    interface NoteDoc {
      _id: Types.ObjectId;
      tenantId: string;
      state: string;
    }
    const model = conn.model<NoteDoc>(
      'SharedApply',
      new Schema<NoteDoc>({ tenantId: { type: String, required: true }, state: String }, { versionKey: false }),
    );
    const notes = new TenantCollection(model, objectIds, []);
    const made = await Promise.all(
      Array.from({ length: 10 }, (_, i) => notes.insert(a, { state: i === 0 ? 'closed' : 'open' })),
    );
    const commands: string[] = [];
    const watch = (e: { commandName: string; command: Record<string, unknown> }) =>
      void (e.command[e.commandName] === model.collection.collectionName && commands.push(e.commandName));
    conn.getClient().on('commandStarted', watch);
    try {
      await Promise.all([
        ...made.map((t) =>
          notes.applyByIdShared(a, t._id.toString(), { $set: { state: 'started' } }, { where: { state: 'open' } }),
        ),
        // Another tenant's try changes nothing; an id that is no id is no write.
        notes.applyByIdShared(b, made[1]!._id.toString(), { $set: { state: 'stolen' } }),
        notes.applyByIdShared(a, 'not-an-id', { $set: { state: 'started' } }),
      ]);
    } finally {
      conn.getClient().off('commandStarted', watch);
    }
    // Asked in one turn: one write for all of them, and no read.
    expect(commands).toEqual(['update']);
    const states = await model
      .find({ _id: { $in: made.map((t) => t._id) } })
      .sort({ _id: 1 })
      .lean();
    expect(states.map((d) => d.state).sort()).toEqual(['closed', ...Array(9).fill('started')]);
  });

  it('reads and erases blobs stored in parts before the object store: each part by its id, under its tenant', async () => {
    const name = `blobs_${randomBytes(3).toString('hex')}`;
    const blobs = new BlobStore(conn, name);
    // Three and a half parts, as a release before the object store wrote them.
    const large = randomBytes(BLOB_PART_BYTES * 3 + 1234);
    const parts = Array.from({ length: 4 }, (_, n) => ({
      _id: `big:${n}`,
      tenantId: a.tenantId,
      data: large.subarray(n * BLOB_PART_BYTES, (n + 1) * BLOB_PART_BYTES),
    }));
    await conn.collection(`${name}_parts`).insertMany(parts as never[]);
    await conn.collection(name).insertOne({
      _id: 'big',
      tenantId: a.tenantId,
      contentType: 'application/pdf',
      sizeBytes: large.length,
      parts: 4,
      createdAt: new Date(),
    } as never);
    expect((await blobs.header(a, 'big'))?.parts).toBe(4);
    expect((await blobs.readAll(a, 'big'))?.equals(large)).toBe(true);
    expect(
      (await blobs.read(a, 'big', BLOB_PART_BYTES + 10)).equals(
        large.subarray(BLOB_PART_BYTES + 10, 2 * BLOB_PART_BYTES),
      ),
    ).toBe(true);
    // Another tenant sees nothing and erases nothing.
    expect(await blobs.header(b, 'big')).toBeNull();
    expect(await blobs.readAll(b, 'big')).toBeNull();
    expect(await blobs.erase(b, 'big')).toBe(false);
    expect(await blobs.erase(a, 'big')).toBe(true);
    expect(await conn.collection(`${name}_parts`).countDocuments({})).toBe(0);
    expect(await blobs.readAll(a, 'big')).toBeNull();
  });
});
