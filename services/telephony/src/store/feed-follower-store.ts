import { type TenantScope } from '@voiceapi/kit/grpc';
import { modelOf, TenantKeyed } from '@voiceapi/kit/mongo';
import { Schema, type Connection } from 'mongoose';

interface FollowerDoc {
  /** The tenant id: read by `_id` alone. */
  _id: string;
  /** The tenant's changes are written to its feed until then. */
  until: Date;
}

export const followerSchema = new Schema<FollowerDoc>(
  { _id: String, until: { type: Date, required: true } },
  { collection: 'call_feed_followers', versionKey: false },
);

/** The tenants that follow their call feed (`GET /calls/stream`), and until when. */
export class FeedFollowerStore {
  private readonly followers: TenantKeyed<FollowerDoc>;

  constructor(conn: Connection) {
    this.followers = new TenantKeyed(modelOf(conn, 'CallFeedFollower', followerSchema));
  }

  /** Until when the tenant follows (undefined: it never did); the reads asked at once are served by one. */
  async until(scope: TenantScope): Promise<Date | undefined> {
    return (await this.followers.getShared(scope))?.until;
  }

  /** The tenant follows until `until` at least (a later time already stored stays). */
  async extend(scope: TenantScope, until: Date): Promise<void> {
    await this.followers.upsert(scope, { $max: { until } });
  }
}
