import { metrics } from '@opentelemetry/api';
import { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { serviceMetrics } from './metrics';

describe('serviceMetrics', () => {
  const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 60_000 });
  beforeAll(() => metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] })));
  afterAll(() => metrics.disable());

  it('names instruments voiceapi.<service>.<thing> and records with their attributes', async () => {
    const m = serviceMetrics('billing');
    m.counter<{ mode: 'live' | 'sandbox' }>('charges', { description: 'calls charged', unit: '{call}' }).add(2, { mode: 'live' });
    m.histogram<{ outcome: string }>('charge.credits', { description: 'credits per charge', unit: '{credit}', buckets: [1, 10, 100] }).record(12, { outcome: 'ok' });
    await reader.forceFlush();
    const all = exporter.getMetrics().flatMap((r) => r.scopeMetrics.flatMap((s) => s.metrics));
    const counter = all.find((x) => x.descriptor.name === 'voiceapi.billing.charges');
    expect(counter?.dataPoints[0]).toMatchObject({ value: 2, attributes: { mode: 'live' } });
    const histogram = all.find((x) => x.descriptor.name === 'voiceapi.billing.charge.credits');
    expect(histogram?.descriptor.unit).toBe('{credit}');
    expect(histogram?.dataPoints[0]).toMatchObject({ attributes: { outcome: 'ok' }, value: { count: 1, sum: 12 } });
  });

  it('refuses a name outside the convention', () => {
    expect(() => serviceMetrics('billing').counter('Charges-Total', { description: 'x' })).toThrow(/dotted lower case/);
  });
});
