import { isDuplicateKeyError, type KeyMode } from '@voiceapi/kit';
import { gatewayReasons } from '../http/reasons';
import { Schema, Types, type Connection, type Model } from 'mongoose';

interface IdempotencyRecord {
  _id: Types.ObjectId;
  tenantId: string;
  mode: KeyMode;
  key: string;
  requestHash: string;
  state: 'in_flight' | 'done';
  status?: number;
  /** The answer's body as JSON text: any JSON a service returns can be stored and replayed as is. */
  body?: string;
  /** An in-flight claim older than this is taken over (its request died with its replica). */
  lockedUntil: Date;
  expiresAt: Date;
}

const schema = new Schema<IdempotencyRecord>(
  {
    tenantId: { type: String, required: true },
    mode: { type: String, required: true },
    key: { type: String, required: true },
    requestHash: { type: String, required: true },
    state: { type: String, required: true },
    status: Number,
    body: String,
    lockedUntil: { type: Date, required: true },
    expiresAt: { type: Date, required: true },
  },
  { collection: 'idempotency_records', versionKey: false, minimize: false },
);
// Serves the claim: one record per tenant, key mode and Idempotency-Key.
schema.index({ tenantId: 1, mode: 1, key: 1 }, { unique: true });
// Serves the expiry sweep (no TTL indexes on FerretDB).
schema.index({ expiresAt: 1 });

export type StoredResponse = { status: number; body: unknown };
export type Claim = { kind: 'claimed'; id: Types.ObjectId } | { kind: 'replay'; response: StoredResponse };

const RETAIN_MS = 24 * 3600_000;
const LOCK_MS = 60_000;

/** Idempotency-Key records: claim before running a POST, store its answer after. */
export class IdempotencyStore {
  private readonly model: Model<IdempotencyRecord>;
  constructor(conn: Connection) {
    this.model = conn.models.IdempotencyRecord ?? conn.model<IdempotencyRecord>('IdempotencyRecord', schema);
  }

  async claim(scope: { tenantId: string; mode: KeyMode; key: string }, requestHash: string): Promise<Claim> {
    for (let attempt = 0; attempt < 3; attempt++) {
      const now = new Date();
      try {
        const doc = await this.model.create({
          ...scope,
          requestHash,
          state: 'in_flight',
          lockedUntil: new Date(now.getTime() + LOCK_MS),
          expiresAt: new Date(now.getTime() + RETAIN_MS),
        });
        return { kind: 'claimed', id: doc._id };
      } catch (err) {
        if (!isDuplicateKeyError(err)) throw err;
      }
      const existing = await this.model.findOne(scope).lean<IdempotencyRecord>();
      if (!existing) continue; // removed between our insert and read: try again
      if (existing.expiresAt <= now) {
        await this.model.deleteOne({ _id: existing._id, expiresAt: { $lte: now } });
        continue;
      }
      if (existing.requestHash !== requestHash) {
        throw gatewayReasons.error('idempotency_key_reused', 'this Idempotency-Key was used with a different request body');
      }
      if (existing.state === 'done') {
        return { kind: 'replay', response: { status: existing.status ?? 200, body: existing.body === undefined ? undefined : JSON.parse(existing.body) } };
      }
      if (existing.lockedUntil <= now) {
        const taken = await this.model.findOneAndUpdate(
          { _id: existing._id, state: 'in_flight', lockedUntil: { $lte: now } },
          { $set: { lockedUntil: new Date(now.getTime() + LOCK_MS) } },
          { new: true },
        );
        if (taken) return { kind: 'claimed', id: taken._id };
      }
      throw gatewayReasons.error('idempotency_in_progress', 'a request with this Idempotency-Key is still in progress');
    }
    throw gatewayReasons.error('idempotency_in_progress', 'a request with this Idempotency-Key is still in progress');
  }

  async complete(id: Types.ObjectId, response: StoredResponse): Promise<void> {
    const body = response.body === undefined ? undefined : JSON.stringify(response.body);
    await this.model.updateOne({ _id: id }, { $set: { state: 'done', status: response.status, ...(body !== undefined && { body }) } });
  }

  /** Forgets a claim whose request failed on our side, so the client may retry with the same key. */
  async release(id: Types.ObjectId): Promise<void> {
    await this.model.deleteOne({ _id: id, state: 'in_flight' });
  }

  async sweep(now = new Date()): Promise<number> {
    return (await this.model.deleteMany({ expiresAt: { $lte: now } })).deletedCount;
  }
}
