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
}
