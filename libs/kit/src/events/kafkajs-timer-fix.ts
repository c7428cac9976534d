import { createRequire } from 'node:module';

/** kafkajs's request queue, as far as the fix below touches it. */
interface RequestQueue {
  pending: unknown[];
  throttledUntil: number;
  throttleCheckTimeoutId: NodeJS.Timeout | null;
  checkPendingRequests(): void;
  scheduleCheckPendingRequests(): void;
}

/** kafkajs's own pause before it looks again at requests over the in-flight limit. */
const RECHECK_MS = 10;
let applied = false;

/**
 * kafkajs 2.2.4 re-arms a 1 ms timer forever on every idle connection, 2–3 % of a core each (decision 0115). The
 * queue is checked on every push and answer anyway, so a timer is needed only while requests wait.
 */
export function fixKafkajsRequestQueueTimer(): void {
  if (applied) return;
  applied = true;
  const load = createRequire(__filename);
  const RequestQueueClass = load('kafkajs/src/network/requestQueue') as { prototype: RequestQueue };
  RequestQueueClass.prototype.scheduleCheckPendingRequests = function (this: RequestQueue) {
    if (this.throttleCheckTimeoutId || this.pending.length === 0) return;
    const throttledMs = this.throttledUntil - Date.now();
    this.throttleCheckTimeoutId = setTimeout(
      () => {
        this.throttleCheckTimeoutId = null;
        this.checkPendingRequests();
      },
      throttledMs > 0 ? throttledMs : RECHECK_MS,
    );
  };
}
