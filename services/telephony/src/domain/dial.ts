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
  /** The campaign's own number to call from. */
  fromNumber?: string;
  queuedAt: Date;
  /** Not tried again before this (the wallet or a service said "later"). */
  notBefore: Date;
  /**
   * When leads asked for the dial (its event's time): the moment the lead could be dialled, at
   * its acceptance or when its scheduled time (a calling window's opening, a retry) came.
   * Absent on dials queued before it was kept.
   */
  requestedAt?: Date;
  /** The lead's call attempt this dial is (1: its first); absent on dials queued before it was kept. */
  attempt?: number;
}
