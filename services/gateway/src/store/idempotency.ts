import { createHash, randomUUID } from 'node:crypto';
import { scopeOfRecord, type KeyMode, type TenantScope } from '@voiceapi/kit/grpc';
import { isDuplicateKeyError, modelOf, stringIds, TenantCollection, type QueryShape } from '@voiceapi/kit/mongo';
import { Schema, type Connection } from 'mongoose';
import type { IdempotencyRecords, StoredResponse } from '../http/idempotency';
import { gatewayReasons } from '../http/reasons';

interface IdempotencyRecord {
  /** Derived from tenant, key mode and Idempotency-Key, so a claim is a lookup by `_id` alone. */
  _id: string;
  tenantId: string;
  mode: KeyMode;
  requestHash: string;
  state: 'in_flight' | 'done';
  status?: number;
  /** The answer's body as JSON text: any JSON a service returns can be stored and replayed as is. */
  body?: string;
  /** An in-flight claim older than this is taken over (its request died with its replica). */
  lockedUntil: Date;
  /** Who holds the in-flight claim: only its holder completes or releases it. */
  claimToken: string;
  expiresAt: Date;
}

export const idempotencySchema = new Schema<IdempotencyRecord>(
  {
    _id: String,
    tenantId: { type: String, required: true },
    mode: { type: String, required: true },
    requestHash: { type: String, required: true },
    state: { type: String, required: true },
    status: Number,
    body: String,
    lockedUntil: { type: Date, required: true },
    claimToken: { type: String, required: true },
    expiresAt: { type: Date, required: true },
  },
  { collection: 'idempotency_records', versionKey: false, minimize: false },
);
// Serves `expired`: the sweep, which deletes a bounded batch per pass (a TTL index would delete at
// the server's pace, unbounded).
idempotencySchema.index({ expiresAt: 1 });
export const idempotencyQueryShapes: QueryShape[] = [{ name: 'expired', equality: [], range: ['expiresAt'] }];

/** Names a claim for `complete` or `release`: the record and the tenant it belongs to. */
export interface ClaimId {
  readonly tenant: TenantScope;
  readonly recordId: string;
  readonly token: string;
}
export type Claim = { kind: 'claimed'; id: ClaimId } | { kind: 'replay'; response: StoredResponse };
export interface IdempotencyScope {
  tenantId: string;
  mode: KeyMode;
  key: string;
}

const RETAIN_MS = 24 * 3600_000;
const LOCK_MS = 60_000;

const recordId = (s: IdempotencyScope) =>
  createHash('sha256').update(`${s.tenantId}\u0000${s.mode}\u0000${s.key}`).digest('hex');
const tenantOf = (s: IdempotencyScope): TenantScope => scopeOfRecord(s.tenantId, s.mode);

/** Idempotency-Key records: claim before running a POST, store its answer after. */
export class IdempotencyStore implements IdempotencyRecords {
  private readonly records: TenantCollection<IdempotencyRecord, string>;

  constructor(conn: Connection) {
    this.records = new TenantCollection(
      modelOf(conn, 'IdempotencyRecord', idempotencySchema),
      stringIds,
      idempotencyQueryShapes,
    );
  }

  async claim(scope: IdempotencyScope, requestHash: string): Promise<Claim> {
    const tenant = tenantOf(scope);
    const id = recordId(scope);
    const token = randomUUID();
    for (let attempt = 0; attempt < 3; attempt++) {
      const now = new Date();
      try {
        await this.records.insert(tenant, {
          claimToken: token,
          _id: id,
          mode: scope.mode,
          requestHash,
          state: 'in_flight',
          lockedUntil: new Date(now.getTime() + LOCK_MS),
          expiresAt: new Date(now.getTime() + RETAIN_MS),
        });
        return { kind: 'claimed', id: { tenant, recordId: id, token } };
      } catch (err) {
        if (!isDuplicateKeyError(err)) throw err;
      }
      const existing = await this.records.findById(tenant, id);
      if (!existing) continue; // removed between our insert and read: try again
      if (existing.expiresAt <= now) {
        await this.records.deleteById(tenant, id, { where: { expiresAt: { $lte: now } } });
        continue;
      }
      if (existing.requestHash !== requestHash) {
        throw gatewayReasons.error(
          'idempotency_key_reused',
          'this Idempotency-Key was used with a different request body',
        );
      }
      if (existing.state === 'done') {
        return {
          kind: 'replay',
          response: {
            status: existing.status ?? 200,
            body: existing.body === undefined ? undefined : JSON.parse(existing.body),
          },
        };
      }
      if (existing.lockedUntil <= now) {
        const taken = await this.records.updateById(
          tenant,
          id,
          { $set: { lockedUntil: new Date(now.getTime() + LOCK_MS), claimToken: token } },
          {
            where: { state: 'in_flight', lockedUntil: { $lte: now } },
          },
        );
        if (taken) return { kind: 'claimed', id: { tenant, recordId: id, token } };
      }
      throw gatewayReasons.error('idempotency_in_progress', 'a request with this Idempotency-Key is still in progress');
    }
    throw gatewayReasons.error('idempotency_in_progress', 'a request with this Idempotency-Key is still in progress');
  }

  async complete(id: ClaimId, response: StoredResponse): Promise<void> {
    const body = response.body === undefined ? undefined : JSON.stringify(response.body);
    // A claim taken over by a retry (this request outlived LOCK_MS) belongs to the retry now.
    await this.records.updateById(
      id.tenant,
      id.recordId,
      { $set: { state: 'done', status: response.status, ...(body !== undefined && { body }) } },
      {
        where: { claimToken: id.token, state: 'in_flight' },
      },
    );
  }

  /** Forgets a claim whose request failed on our side, so the client may retry with the same key. */
  async release(id: ClaimId): Promise<void> {
    await this.records.deleteById(id.tenant, id.recordId, { where: { state: 'in_flight', claimToken: id.token } });
  }

  async sweep(now = new Date()): Promise<number> {
    return this.records.crossTenant('the expiry sweep covers every tenant').deleteMany({ expiresAt: { $lte: now } });
  }
}
