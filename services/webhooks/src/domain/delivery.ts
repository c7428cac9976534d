export type DeliveryStatus = 'pending' | 'succeeded' | 'failed';

/**
 * One message to one endpoint (the message's bytes are in `messages`, the same on every attempt
 * and after a recovery). The history (succeeded and failed deliveries) lives here; each attempt is
 * inserted into `delivery_attempts`; what is still to be sent is also claimed or queued
 * (queue-store). Documents stay small: the delivery is updated once per attempt.
 */
export interface Delivery {
  _id: string;
  tenantId: string;
  endpointId: string;
  messageId: string;
  type: string;
  status: DeliveryStatus;
  /** Attempts made, ever. */
  attempts: number;
  /** Attempts made in this round (a recovery starts a new round on the schedule). */
  step: number;
  lastStatusCode?: number;
  lastError?: string;
  nextAttemptAt?: Date;
  createdAt: Date;
  updatedAt: Date;
}
