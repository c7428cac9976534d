import type { CallOutcome } from '../domain/call';

/** Announces an outcome (the CallBilled event); must be idempotent by call id. */
export type OutcomeAnnouncer = (outcome: CallOutcome) => Promise<void>;
