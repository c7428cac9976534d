import { stringIds, TenantCollection, type QueryShape, type TenantScope } from '@voiceapi/kit';
import { Schema, type Connection, type Model } from 'mongoose';

interface ClaimDoc {
  /** The dial id (`<contactId>:<n>`): the insert that claims it is the one atomic step every store offers. */
  _id: string;
  tenantId: string;
  contactId: string;
  claimedAt: Date;
}

export const claimSchema = new Schema<ClaimDoc>(
  { _id: String, tenantId: { type: String, required: true }, contactId: { type: String, required: true }, claimedAt: { type: Date, required: true } },
  { collection: 'dial_claims', versionKey: false },
);
// Serves `contact` (erasing a contact's claims).
claimSchema.index({ tenantId: 1, contactId: 1 });
export const claimQueryShapes: QueryShape[] = [{ name: 'contact', equality: ['tenantId', 'contactId'] }];

/** Dial ids already dialled: a redelivered dial request finds its id here and dials nobody. */
export class DialClaimStore {
  private readonly claims: TenantCollection<ClaimDoc, string>;

  constructor(conn: Connection) {
    this.claims = new TenantCollection((conn.models.DialClaim as Model<ClaimDoc> | undefined) ?? conn.model<ClaimDoc>('DialClaim', claimSchema), stringIds, claimQueryShapes);
  }

  /** True for the first claim of a dial id, false for every later one. */
  claim(scope: TenantScope, dialId: string, contactId: string, now: Date): Promise<boolean> {
    // Claims asked together (a dispatch pass) are inserted in one write; each id's first insert wins.
    return this.claims.insertShared(scope, { _id: dialId, contactId, claimedAt: now });
  }

  eraseContact(scope: TenantScope, contactId: string): Promise<number> {
    return this.claims.deleteMany(scope, { contactId });
  }
}
