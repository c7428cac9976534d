import type { Model } from 'mongoose';
import { cachedRead, serviceMetrics, type ObservedGauge } from '../telemetry/metrics';
import type { OutboxDoc, ParkedDoc } from './outbox-store';

/**
 * The outbox's gauges read the store at most this often (every replica reports its service's
 * outbox: the figures are the store's, not the replica's).
 */
const FIGURES_TTL_MS = 10_000;

/** What the outbox's gauges report (`voiceapi.outbox.*`). */
interface OutboxFigures {
  /** Events stored and not yet published (held ones too). */
  backlog: number;
  /** When the oldest of them was stored; undefined when none waits. */
  oldestAt?: Date;
  /** Events Kafka refused, in `outbox_parked`. */
  parked: number;
}

/**
 * The outbox's gauges (`voiceapi.outbox.*`), read from the store when metrics are exported (never
 * while telemetry is off), at most every `FIGURES_TTL_MS`. Every replica reports the same figures
 * of its service's outbox (whichever replica relays): take the highest (`max by (job)`), not the sum.
 */
export function outboxGauges(model: Model<OutboxDoc>, parked: Model<ParkedDoc>): ObservedGauge[] {
  const figures = cachedRead(FIGURES_TTL_MS, () => readFigures(model, parked));
  const m = serviceMetrics('outbox');
  return [
    m.gauge(
      'backlog',
      { description: 'Events stored in the outbox and not yet published to Kafka (held ones too)', unit: '{event}' },
      async () => [{ value: (await figures()).backlog, attributes: {} }],
    ),
    m.gauge(
      'oldest_age',
      { description: 'Age of the oldest event in the outbox not yet published (0 when none waits)', unit: 's' },
      async () => {
        const { oldestAt } = await figures();
        return [{ value: oldestAt ? Math.max(0, Date.now() - oldestAt.getTime()) / 1000 : 0, attributes: {} }];
      },
    ),
    m.gauge(
      'parked',
      { description: 'Events Kafka refused for good, kept in outbox_parked for an operator', unit: '{event}' },
      async () => [{ value: (await figures()).parked, attributes: {} }],
    ),
  ];
}

/**
 * Three small reads: the waiting and the parked events counted from the collections' metadata,
 * and the first waiting event in sequence order (the relay's order and index; events of new keys
 * take numbers from a block reserved earlier, so the true oldest may sit a block's hold time
 * behind it).
 */
async function readFigures(model: Model<OutboxDoc>, parked: Model<ParkedDoc>): Promise<OutboxFigures> {
  const [backlog, first, parkedCount] = await Promise.all([
    model.estimatedDocumentCount(),
    model.findOne({}, { _id: 0, createdAt: 1 }).sort({ seq: 1 }).lean<Pick<OutboxDoc, 'createdAt'>>(),
    parked.estimatedDocumentCount(),
  ]);
  return { backlog, parked: parkedCount, ...(first && { oldestAt: first.createdAt }) };
}
