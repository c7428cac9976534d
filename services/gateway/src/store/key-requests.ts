import { type KeyMode, type TenantScope } from '@voiceapi/kit/grpc';
import { modelOf, objectIds, TenantCollection, type QueryShape } from '@voiceapi/kit/mongo';
import { Schema, type Connection, type Types } from 'mongoose';
import type { Scope } from '../auth/scopes';

export type RequestStatus = 'pending' | 'approved' | 'rejected';

export interface KeyRequestRecord {
  _id: Types.ObjectId;
  tenantId: string;
  name: string;
  mode: KeyMode;
  purpose: string;
  scopes: Scope[];
  status: RequestStatus;
  reason?: string;
  apiKeyId?: string;
  createdAt: Date;
  decidedAt?: Date;
}

export const keyRequestSchema = new Schema<KeyRequestRecord>(
  {
    tenantId: { type: String, required: true },
    name: { type: String, required: true },
    mode: { type: String, enum: ['live', 'sandbox'], required: true },
    purpose: { type: String, required: true },
    scopes: { type: [String], required: true },
    status: { type: String, enum: ['pending', 'approved', 'rejected'], required: true },
    reason: String,
    apiKeyId: String,
    createdAt: { type: Date, required: true },
    decidedAt: Date,
  },
  { collection: 'api_key_requests', versionKey: false },
);
// Serves `queue`: the operator's requests by status, oldest first.
keyRequestSchema.index({ status: 1, createdAt: 1 });

export const keyRequestQueryShapes: QueryShape[] = [
  { name: 'queue', equality: ['status'], sort: { createdAt: 1 } },
  { name: 'all', equality: [], sort: { createdAt: 1 } },
];
keyRequestSchema.index({ createdAt: 1 }); // Serves `all`: the whole queue, oldest first.

const OPERATOR = 'the operator decides requests of every tenant';

/** Key requests filed for tenants (dashboard "API Access"), decided by operators. */
export class KeyRequestStore {
  private readonly requests: TenantCollection<KeyRequestRecord>;

  constructor(conn: Connection) {
    this.requests = new TenantCollection(
      modelOf(conn, 'KeyRequest', keyRequestSchema),
      objectIds,
      keyRequestQueryShapes,
    );
  }

  create(
    scope: TenantScope,
    doc: Pick<KeyRequestRecord, 'name' | 'mode' | 'purpose' | 'scopes'>,
  ): Promise<KeyRequestRecord> {
    return this.requests.insert(scope, { ...doc, status: 'pending', createdAt: new Date() });
  }

  list(status?: RequestStatus): Promise<KeyRequestRecord[]> {
    return this.requests.crossTenant(OPERATOR).find(status ? { status } : {}, { sort: { createdAt: 1 }, limit: 500 });
  }

  get(id: string): Promise<KeyRequestRecord | null> {
    return this.requests.crossTenant(OPERATOR).findById(id);
  }

  /** Moves a pending request to a decision atomically: exactly one approve or reject wins. */
  decide(
    id: string,
    changes: Partial<Omit<KeyRequestRecord, 'tenantId'>> & { status: RequestStatus },
  ): Promise<KeyRequestRecord | null> {
    return this.requests
      .crossTenant(OPERATOR)
      .updateById(id, { $set: { ...changes, decidedAt: new Date() } }, { where: { status: 'pending' } });
  }

  async reopen(id: string): Promise<void> {
    await this.requests
      .crossTenant(OPERATOR)
      .updateById(id, { $set: { status: 'pending' }, $unset: { apiKeyId: 1, decidedAt: 1 } });
  }
}
