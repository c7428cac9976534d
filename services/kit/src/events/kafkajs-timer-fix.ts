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
 * kafkajs 2.2.4 (its last release) re-arms a timer every millisecond, forever, on every broker
 * connection once a response has come back with nothing queued behind it: the throttle deadline
 * it waits for is in the past, and a negative delay runs after 1 ms (Node warns
 * `TimeoutNegativeWarning`). An idle service woke about a thousand times a second per connection,
 * 2–3 % of a core each (profiled in docs/performance.md, "An idle system"). The queue is looked at
 * whenever a request is pushed or answered anyway, so a timer is needed only while requests wait:
 * until a broker's throttle ends, or for kafkajs's 10 ms recheck. Applied once, by `createKafka`.
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
