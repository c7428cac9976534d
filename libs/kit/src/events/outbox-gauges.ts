import type { Model } from 'mongoose';
import { cachedRead, serviceMetrics, type ObservedGauge } from '../telemetry/metrics';
import type { OutboxDoc, ParkedDoc } from './outbox-store';

/** The outbox's gauges read the store at most this often. */
const FIGURES_TTL_MS = 10_000;

interface OutboxFigures {
  backlog: number;
  oldestAt?: Date;
  parked: number;
}

/** `voiceapi.outbox.*`: every replica reports the same store figures, so take `max by (job)`, not the sum. */
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

/** Counts from metadata, and the first event by `seq` (a new key's reserved number may make it not the oldest). */
async function readFigures(model: Model<OutboxDoc>, parked: Model<ParkedDoc>): Promise<OutboxFigures> {
  const [backlog, first, parkedCount] = await Promise.all([
    model.estimatedDocumentCount(),
    model.findOne({}, { _id: 0, createdAt: 1 }).sort({ seq: 1 }).lean<Pick<OutboxDoc, 'createdAt'>>(),
    parked.estimatedDocumentCount(),
  ]);
  return { backlog, parked: parkedCount, ...(first && { oldestAt: first.createdAt }) };
}
