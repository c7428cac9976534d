import { type TenantScope } from '@voiceapi/kit/grpc';
import { modelOf, stringIds, TenantCollection, type QueryShape } from '@voiceapi/kit/mongo';
import { Schema, type Connection } from 'mongoose';

interface LeaseDoc {
  /** The stream's id. */
  _id: string;
  tenantId: string;
  keyId: string;
  /** Renewed while the stream is open; a stream whose replica died stops counting at this time. */
  expiresAt: Date;
}

export const streamLeaseSchema = new Schema<LeaseDoc>(
  {
    _id: String,
    tenantId: { type: String, required: true },
    keyId: { type: String, required: true },
    expiresAt: { type: Date, required: true },
  },
  { collection: 'stream_leases', versionKey: false },
);
// Serves `a key's open streams` (those not expired, counted at each opening).
streamLeaseSchema.index({ tenantId: 1, keyId: 1, expiresAt: 1 });
// Serves `expired`: the sweep, a bounded delete per pass.
streamLeaseSchema.index({ expiresAt: 1 });
export const streamLeaseQueryShapes: QueryShape[] = [
  { name: "a key's open streams", equality: ['tenantId', 'keyId'], range: ['expiresAt'] },
  { name: 'expired', equality: [], range: ['expiresAt'] },
];

/**
 * The open streams of each key, across gateway replicas, so a key's cap holds whichever replicas
 * its streams reach: a stream holds a lease while open, renewed as it goes and deleted when it
 * ends; one whose replica died stops counting when its lease expires.
 */
export class StreamLeaseStore {
  private readonly leases: TenantCollection<LeaseDoc, string>;

  constructor(conn: Connection) {
    this.leases = new TenantCollection(
      modelOf(conn, 'StreamLease', streamLeaseSchema),
      stringIds,
      streamLeaseQueryShapes,
    );
  }

  /** Takes a lease for the stream; false (and none taken) when the key holds `max` already. */
  async open(scope: TenantScope, keyId: string, streamId: string, max: number, leaseMs: number): Promise<boolean> {
    const now = Date.now();
    await this.leases.insert(scope, { _id: streamId, keyId, expiresAt: new Date(now + leaseMs) });
    // Counted after the insert: two openings at once both see each other, so neither slips past the cap.
    const open = await this.leases.count(scope, { keyId, expiresAt: { $gt: new Date(now) } });
    if (open <= max) return true;
    await this.close(scope, streamId);
    return false;
  }

  async renew(scope: TenantScope, streamId: string, leaseMs: number): Promise<void> {
    await this.leases.updateById(scope, streamId, { $set: { expiresAt: new Date(Date.now() + leaseMs) } });
  }

  async close(scope: TenantScope, streamId: string): Promise<void> {
    await this.leases.deleteById(scope, streamId);
  }

  /** Deletes the leases of streams whose replica died (expired). */
  async sweep(now = new Date()): Promise<number> {
    return this.leases.crossTenant('the expiry sweep covers every tenant').deleteMany({ expiresAt: { $lte: now } });
  }
}
