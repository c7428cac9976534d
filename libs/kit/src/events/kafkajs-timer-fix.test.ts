import { createRequire } from 'node:module';
import { fixKafkajsRequestQueueTimer } from './kafkajs-timer-fix';

const RequestQueue = createRequire(__filename)('kafkajs/src/network/requestQueue') as new (o: object) => {
  pending: unknown[];
  throttledUntil: number;
  throttleCheckTimeoutId: NodeJS.Timeout | null;
  checkPendingRequests(): void;
};

const newQueue = () =>
  new RequestQueue({
    instrumentationEmitter: null,
    maxInFlightRequests: 1,
    requestTimeout: 1_000,
    enforceRequestTimeout: false,
    clientId: 't',
    broker: 'b',
    logger: { debug: () => undefined },
  });

describe('kafkajs request queue timer', () => {
  it('once fixed, arms no timer with nothing pending, and one until the throttle ends while requests wait', () => {
    fixKafkajsRequestQueueTimer();
    const idle = newQueue();
    idle.checkPendingRequests();
    expect(idle.throttleCheckTimeoutId).toBeNull();

    const waiting = newQueue();
    waiting.pending.push({});
    waiting.throttledUntil = Date.now() + 60_000;
    waiting.checkPendingRequests();
    expect(waiting.throttleCheckTimeoutId).not.toBeNull();
    clearTimeout(waiting.throttleCheckTimeoutId!);
  });
});
