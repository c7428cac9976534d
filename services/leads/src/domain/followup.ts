import type { Channel } from './contact';

export type FollowupStatus = 'scheduled' | 'done' | 'cancelled' | 'refused';

export interface Followup {
  id: string;
  contactId: string;
  scheduledAt: Date;
  channel: Channel;
  note?: string;
  status: FollowupStatus;
  /** Why the checks at its time said no (`do_not_call`, …). */
  refusal?: string;
  createdAt: Date;
}
