import { type TenantScope } from '@voiceapi/kit/grpc';
import {
  declareQueries,
  isDuplicateKeyError,
  modelOf,
  platformModel,
  ReadCache,
  stringIds,
  TenantCollection,
  type Page,
  type QueryShape,
} from '@voiceapi/kit/mongo';
import { type Logger } from '@voiceapi/kit/service';
import { Schema, type Connection, type Model } from 'mongoose';
import type { PhoneNumber } from '../domain/number';

interface NumberDoc extends Omit<PhoneNumber, 'phoneNumber'> {
  /** The E.164 number: inbound calls find their number by `_id` alone. */
  _id: string;
}

export const numberSchema = new Schema<NumberDoc>(
  {
    _id: String,
    id: { type: String, required: true },
    countryIso: { type: String, required: true },
    monthlyCredits: { type: Number, required: true },
    status: { type: String, required: true },
    tenantId: String,
    agentId: String,
    purchasedAt: Date,
    createdAt: { type: Date, required: true },
  },
  { collection: 'numbers', versionKey: false },
);
// Serves `owned` (a tenant's numbers, newest first).
numberSchema.index({ tenantId: 1, purchasedAt: -1, _id: 1 });
// Serves `available` (the pool, by country).
numberSchema.index({ status: 1, countryIso: 1, _id: 1 });
// Serves `by id` (GetOwnedNumber by the number's public id).
numberSchema.index({ id: 1 }, { unique: true });
export const numberQueryShapes: QueryShape[] = [
  { name: 'owned', equality: ['tenantId'], sort: { purchasedAt: -1, _id: 1 } },
  { name: 'available', equality: ['status', 'countryIso'], sort: { _id: 1 } },
  { name: 'available anywhere', equality: ['status'] },
  { name: 'by id', equality: ['id'] },
];

interface SaleDoc {
  /** The number: the insert that claims it is atomic on every store, so it is sold once. */
  _id: string;
  tenantId: string;
  /** `pending` while billing debits the buyer; `done` after. */
  state: 'pending' | 'done';
  createdAt: Date;
}

export const saleSchema = new Schema<SaleDoc>(
  {
    _id: String,
    tenantId: { type: String, required: true },
    state: { type: String, required: true },
    createdAt: { type: Date, required: true },
  },
  { collection: 'number_sales', versionKey: false },
);

/** The number pool and each tenant's numbers (one document per number, owned or not). */
export class NumberStore {
  private readonly model: Model<NumberDoc>;
  private readonly sales: Model<SaleDoc>;

  /** Numbers by phone number for inbound lookups; emptied when any replica changes the pool (decision 0113). */
  readonly cache: ReadCache<NumberDoc>;

  constructor(conn: Connection, opts: { cacheTtlMs: number; log: Logger }) {
    this.model = platformModel(
      modelOf(conn, 'PhoneNumber', numberSchema),
      "the number pool is the platform's; a number sold names its tenant, checked on every tenant read",
    );
    this.sales = platformModel(
      modelOf(conn, 'NumberSale', saleSchema),
      "a sale is the platform's lock on one number, whoever buys it",
    );
    declareQueries(this.model, numberQueryShapes);
    this.cache = new ReadCache({
      source: { model: this.model, operations: ['insert', 'update', 'replace', 'delete'] },
      ttlMs: opts.cacheTtlMs,
      log: opts.log,
    });
  }

  /** Adds a number to the pool; false when the number exists already (in the pool or owned). */
  async addToPool(n: Omit<PhoneNumber, 'status' | 'tenantId'>): Promise<PhoneNumber | null> {
    try {
      const { phoneNumber, ...rest } = n;
      await this.model.create({ _id: phoneNumber, ...rest, status: 'available' });
      this.cache.forgetAll();
      return { ...n, status: 'available' };
    } catch (err) {
      if (isDuplicateKeyError(err)) return null;
      throw err;
    }
  }

  async byNumber(phoneNumber: string): Promise<PhoneNumber | null> {
    const doc = await this.model.findById(phoneNumber).lean<NumberDoc>();
    return doc ? toNumber(doc) : null;
  }

  async owned(scope: TenantScope, opts: { id?: string; phoneNumber?: string }): Promise<PhoneNumber | null> {
    const phone = opts.phoneNumber;
    const doc = phone
      ? await this.cache.get(phone, () => this.model.findById(phone).lean<NumberDoc>().exec())
      : await this.model.findOne({ id: opts.id }).lean<NumberDoc>();
    return doc && doc.tenantId === scope.tenantId && doc.status === 'active' ? toNumber(doc) : null;
  }

  async ownedPage(scope: TenantScope, page: number, limit: number): Promise<Page<PhoneNumber>> {
    const owned = new TenantCollection(
      this.model as Model<NumberDoc & { tenantId: string }>,
      stringIds,
      numberQueryShapes,
    );
    const res = await owned.page(scope, {}, { sort: { purchasedAt: -1, _id: 1 }, page, limit });
    return { ...res, items: res.items.map(toNumber) };
  }

  async available(countryIso: string | undefined, contains: string | undefined, limit: number): Promise<PhoneNumber[]> {
    const filter: Record<string, unknown> = { status: 'available', ...(countryIso && { countryIso }) };
    // Digits only (checked by the caller), so the pattern has nothing to escape.
    if (contains) filter._id = { $regex: contains };
    const docs = await this.model.find(filter).sort({ _id: 1 }).limit(limit).lean<NumberDoc[]>();
    return docs.map(toNumber);
  }

  /** Claims the number: one tenant wins however many buy at once; its own pending claim resumes (a retry). */
  async claimSale(tenantId: string, phoneNumber: string, now: Date): Promise<'claimed' | 'resumed' | 'taken'> {
    try {
      await this.sales.create({ _id: phoneNumber, tenantId, state: 'pending', createdAt: now });
      return 'claimed';
    } catch (err) {
      if (!isDuplicateKeyError(err)) throw err;
      const sale = await this.sales.findById(phoneNumber).lean<SaleDoc>();
      return sale?.tenantId === tenantId && sale.state === 'pending' ? 'resumed' : 'taken';
    }
  }

  /** Gives the claim up (the debit was refused), so the number is for sale again. */
  async dropSale(tenantId: string, phoneNumber: string): Promise<void> {
    await this.sales.deleteOne({ _id: phoneNumber, tenantId, state: 'pending' });
  }

  async completeSale(tenantId: string, phoneNumber: string, now: Date): Promise<PhoneNumber | null> {
    const doc = await this.model
      .findOneAndUpdate({ _id: phoneNumber }, { $set: { tenantId, status: 'active', purchasedAt: now } }, { new: true })
      .lean<NumberDoc>();
    this.cache.forgetAll();
    await this.sales.updateOne({ _id: phoneNumber }, { $set: { state: 'done' } });
    return doc ? toNumber(doc) : null;
  }

  /** Operator assignment: a number (new, or still in the pool) given to the tenant free. */
  async assign(
    tenantId: string,
    n: { phoneNumber: string; countryIso: string; id: string },
    now: Date,
  ): Promise<PhoneNumber | null> {
    const claim = await this.claimSale(tenantId, n.phoneNumber, now);
    if (claim === 'taken') return null;
    const existing = await this.model.findById(n.phoneNumber).lean<NumberDoc>();
    if (!existing) {
      await this.model
        .create({
          _id: n.phoneNumber,
          id: n.id,
          countryIso: n.countryIso,
          monthlyCredits: 0,
          status: 'available',
          createdAt: now,
        })
        .catch((err: unknown) => {
          if (!isDuplicateKeyError(err)) throw err;
        });
    }
    return this.completeSale(tenantId, n.phoneNumber, now);
  }
}

function toNumber(doc: NumberDoc): PhoneNumber {
  const { _id, ...rest } = doc;
  return { phoneNumber: _id, ...rest };
}
