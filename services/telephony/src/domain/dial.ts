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
  /** When the lead could be dialled (its request's time: acceptance or a scheduled time); absent on older dials. */
  requestedAt?: Date;
  /** The lead's call attempt this dial is (1: its first); absent on dials queued before it was kept. */
  attempt?: number;
}
