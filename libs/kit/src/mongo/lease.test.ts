import { metrics } from '@opentelemetry/api';
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';
import type { Connection } from 'mongoose';
import { Lease } from './lease';

describe('Lease', () => {
  const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 60_000 });
  beforeAll(() => metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] })));
  afterAll(() => metrics.disable());

  const held = async () => {
    exporter.reset();
    await reader.forceFlush();
    const gauge = exporter
      .getMetrics()
      .flatMap((r) => r.scopeMetrics.flatMap((s) => s.metrics))
      .find((m) => m.descriptor.name === 'voiceapi.lease.held');
    return gauge && Object.fromEntries(gauge.dataPoints.map((p) => [p.attributes.lease, p.value]));
  };

  /** A store whose lease documents are held by `holder` (this replica when it is `a`). */
  const storeHeldBy = (holder: { name: string }) =>
    ({
      models: {
        Lease: {
          findOneAndUpdate: (filter: { _id: string }) => ({
            lean: () => Promise.resolve({ _id: filter._id, holder: holder.name }),
          }),
          deleteOne: () => Promise.resolve(),
        },
      },
    }) as unknown as Connection;

  it('reports voiceapi.lease.held per lease name from its first hold: 1 while this replica holds it, 0 once it does not', async () => {
    const holder = { name: 'a' };
    const conn = storeHeldBy(holder);
    const relay = new Lease(conn, 'outbox-relay', 'a', 60_000);
    const unused = new Lease(conn, 'billing-sweeper', 'a', 60_000);
    expect(await held()).toBeUndefined(); // nothing held yet: not observed
    await relay.hold(() => undefined);
    expect(await held()).toEqual({ 'outbox-relay': 1 });
    holder.name = 'b'; // another replica took it over
    await relay.acquire();
    expect(await held()).toEqual({ 'outbox-relay': 0 });
    holder.name = 'a';
    await relay.acquire();
    await relay.letGo();
    expect(await held()).toEqual({ 'outbox-relay': 0 });
    expect(unused.held).toBe(false);
  });
});
