export type DeliveryStatus = 'pending' | 'succeeded' | 'failed';

/** One attempt, as kept in its delivery. */
export interface AttemptRecord {
  at: Date;
  statusCode?: number;
  error?: string;
  durationMs: number;
}

/**
 * One message to one endpoint, in one document with its bytes and attempts (decision 0138). While pending,
 * `nextAttemptAt` is when any replica may take it next (the end of a replica's hold, if one holds it).
 */
export interface Delivery {
  _id: string;
  tenantId: string;
  endpointId: string;
  messageId: string;
  type: string;
  /** Absent before 1.3, whose bodies are in `messages`. */
  body?: string;
  status: DeliveryStatus;
  /** Attempts made, ever. */
  attempts: number;
  /** Attempts made in this round (a recovery starts a new round on the schedule). */
  step: number;
  /** The latest attempts, oldest first (at most `MAX_ATTEMPT_LOG`). */
  attemptLog?: AttemptRecord[];
  lastStatusCode?: number;
  lastError?: string;
  nextAttemptAt?: Date;
  createdAt: Date;
  updatedAt: Date;
}

/** Attempts kept in a delivery: the schedule's eight and a recovery's round, the oldest dropped past it. */
export const MAX_ATTEMPT_LOG = 20;
