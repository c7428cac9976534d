import { metrics } from '@opentelemetry/api';
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';
import { commonReasons } from './errors';
import { orFallback } from './fallback';

describe('orFallback', () => {
  const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 60_000 });
  beforeAll(() => metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] })));
  afterAll(() => metrics.disable());

  const points = async () => {
    await reader.forceFlush();
    return (exporter.getMetrics().at(-1)?.scopeMetrics ?? [])
      .flatMap((s) => s.metrics)
      .filter((m) => m.descriptor.name === 'voiceapi.fallbacks')
      .flatMap((m) => m.dataPoints.map((p) => ({ value: p.value, ...p.attributes })));
  };
  const site = { dependency: 'webhooks', operation: 'ListSubscribedTypes' };

  it("answers the attempt's answer and counts nothing when it succeeds", async () => {
    await expect(
      orFallback(
        site,
        async () => 'asked',
        () => 'made up',
      ),
    ).resolves.toBe('asked');
    expect(await points()).toEqual([]);
  });

  it("answers the fallback's answer when the attempt fails, counted by dependency, operation and reason", async () => {
    const unavailable = commonReasons.error('service_unavailable', 'webhooks is away');
    for (const err of [unavailable, unavailable, new TypeError('bad')])
      await expect(
        orFallback(
          site,
          () => Promise.reject(err),
          () => 'made up',
        ),
      ).resolves.toBe('made up');
    expect(await points()).toEqual(
      expect.arrayContaining([
        { value: 2, dependency: 'webhooks', operation: 'ListSubscribedTypes', reason: 'service_unavailable' },
        { value: 1, dependency: 'webhooks', operation: 'ListSubscribedTypes', reason: 'TypeError' },
      ]),
    );
  });
});
