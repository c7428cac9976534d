/** Errors on the wire, and what to do about them: retry what is transient, fall back where decided. */
export * from '../errors';
export * from '../transient';
export * from '../fallback';
