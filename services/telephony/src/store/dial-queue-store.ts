import { declareQueries, isDuplicateKeyError, type QueryShape } from '@voiceapi/kit';
import { Schema, type Connection, type Model } from 'mongoose';

/** A dial request accepted from leads, waiting for a free line. */
export interface QueuedDial {
  /** The dial id (`<contactId>:<n>`): a redelivered request finds itself queued already. */
  dialId: string;
  tenantId: string;
  contactId: string;
  campaignId: string;
  phone: string;
  maxCallSeconds: number;
  agentName?: string;
  queuedAt: Date;
  /** Not tried again before this (the wallet or a service said "later"). */
  notBefore: Date;
}

interface QueuedDoc extends Omit<QueuedDial, 'dialId'> {
  _id: string;
}

export const queuedSchema = new Schema<QueuedDoc>(
  {
    _id: String,
    tenantId: { type: String, required: true },
    contactId: { type: String, required: true },
    campaignId: { type: String, required: true },
    phone: { type: String, required: true },
    maxCallSeconds: { type: Number, required: true },
    agentName: String,
    queuedAt: { type: Date, required: true },
    notBefore: { type: Date, required: true },
  },
  { collection: 'dial_queue', versionKey: false },
);
// Serves `due` (the dispatcher's poll, oldest first). Dispatched requests are deleted, so the
// queue holds only waiting work and the poll stays small on a store without indexes too.
queuedSchema.index({ queuedAt: 1 });
export const queuedQueryShapes: QueryShape[] = [{ name: 'due', equality: [], sort: { queuedAt: 1 } }];

export class DialQueueStore {
  private readonly model: Model<QueuedDoc>;

  constructor(conn: Connection) {
    this.model = conn.models.QueuedDial ?? conn.model<QueuedDoc>('QueuedDial', queuedSchema);
    declareQueries(this.model, queuedQueryShapes);
  }

  /** False when the request is queued already (a redelivery). */
  async add(d: QueuedDial): Promise<boolean> {
    const { dialId, ...rest } = d;
    try {
      await this.model.create({ _id: dialId, ...rest });
      return true;
    } catch (err) {
      if (isDuplicateKeyError(err)) return false;
      throw err;
    }
  }

  async waiting(limit: number): Promise<QueuedDial[]> {
    const docs = await this.model.find({}).sort({ queuedAt: 1 }).limit(limit).lean<QueuedDoc[]>();
    return docs.map(({ _id, ...rest }) => ({ dialId: _id, ...rest }));
  }

  async postpone(dialId: string, until: Date): Promise<void> {
    await this.model.updateOne({ _id: dialId }, { $set: { notBefore: until } });
  }

  async remove(dialId: string): Promise<void> {
    await this.model.deleteOne({ _id: dialId });
  }
}
