/** Background work: the Worker (lease, wake-ups, lag, clean stop) and the Coalescer. */
export * from '../worker';
export * from '../coalesce';
