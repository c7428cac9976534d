import { context, metrics } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { isTracingSuppressed } from '@opentelemetry/core';
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';
import { cachedRead, serviceMetrics } from './metrics';

describe('serviceMetrics', () => {
  const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 60_000 });
  beforeAll(() => {
    metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }));
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  });
  afterAll(() => {
    metrics.disable();
    context.disable();
  });

  it('names instruments voiceapi.<service>.<thing> and records with their attributes', async () => {
    const m = serviceMetrics('billing');
    m.counter<{ mode: 'live' | 'sandbox' }>('charges', { description: 'calls charged', unit: '{call}' }).add(2, {
      mode: 'live',
    });
    m.histogram<{ outcome: string }>('charge.credits', {
      description: 'credits per charge',
      unit: '{credit}',
      buckets: [1, 10, 100],
    }).record(12, { outcome: 'ok' });
    await reader.forceFlush();
    const all = exporter.getMetrics().flatMap((r) => r.scopeMetrics.flatMap((s) => s.metrics));
    const counter = all.find((x) => x.descriptor.name === 'voiceapi.billing.charges');
    expect(counter?.dataPoints[0]).toMatchObject({ value: 2, attributes: { mode: 'live' } });
    const histogram = all.find((x) => x.descriptor.name === 'voiceapi.billing.charge.credits');
    expect(histogram?.descriptor.unit).toBe('{credit}');
    expect(histogram?.dataPoints[0]).toMatchObject({ attributes: { outcome: 'ok' }, value: { count: 1, sum: 12 } });
  });

  const exported = async (name: string) => {
    exporter.reset();
    await reader.forceFlush();
    return exporter
      .getMetrics()
      .flatMap((r) => r.scopeMetrics.flatMap((s) => s.metrics))
      .find((x) => x.descriptor.name === name);
  };

  it('observes a gauge at each export, one value per attribute set, untraced, until stopped', async () => {
    let lag = 7;
    const traced: boolean[] = [];
    const gauge = serviceMetrics('events').gauge<{ group: string; topic: string }>(
      'group.lag',
      { description: 'lag', unit: '{message}' },
      () => {
        traced.push(!isTracingSuppressed(context.active()));
        return [
          { value: lag, attributes: { group: 'billing.call-charging', topic: 'telephony.call.v1' } },
          { value: 0, attributes: { group: 'leads.calls', topic: 'telephony.call.v1' } },
        ];
      },
    );
    const first = await exported('voiceapi.events.group.lag');
    expect(first?.descriptor).toMatchObject({ unit: '{message}', type: 'OBSERVABLE_GAUGE' });
    expect(first?.dataPoints.map((p) => [p.attributes.group, p.value])).toEqual([
      ['billing.call-charging', 7],
      ['leads.calls', 0],
    ]);
    lag = 3;
    expect(
      (await exported('voiceapi.events.group.lag'))?.dataPoints.find(
        (p) => p.attributes.group === 'billing.call-charging',
      )?.value,
    ).toBe(3);
    expect(traced).toEqual([false, false]);
    gauge.stop();
    // Not observed any more; the SDK repeats the last values (cumulative temporality).
    expect((await exported('voiceapi.events.group.lag'))?.dataPoints.map((p) => p.value)).toEqual([3, 0]);
    expect(traced).toHaveLength(2);
  });

  it('leaves a gauge whose observing fails out of the export, and the other gauges in', async () => {
    const failing = serviceMetrics('outbox').gauge('backlog', { description: 'x', unit: '{event}' }, () =>
      Promise.reject(new Error('store away')),
    );
    const throwing = serviceMetrics('outbox').gauge('parked', { description: 'x', unit: '{event}' }, () => {
      throw new Error('store away');
    });
    const fine = serviceMetrics('outbox').gauge('oldest_age', { description: 'x', unit: 's' }, async () => [
      { value: 1.5, attributes: {} },
    ]);
    expect((await exported('voiceapi.outbox.backlog'))?.dataPoints ?? []).toEqual([]);
    expect((await exported('voiceapi.outbox.parked'))?.dataPoints ?? []).toEqual([]);
    expect((await exported('voiceapi.outbox.oldest_age'))?.dataPoints[0]?.value).toBe(1.5);
    for (const g of [failing, throwing, fine]) g.stop();
  });

  it('refuses a name outside the convention', () => {
    expect(() => serviceMetrics('billing').counter('Charges-Total', { description: 'x' })).toThrow(/dotted lower case/);
  });
});

describe('cachedRead', () => {
  it('reads at most once per ttl, shares a read under way, and keeps no failure', async () => {
    let t = 0;
    let reads = 0;
    let fail = false;
    const read = cachedRead(
      5_000,
      async () => {
        reads++;
        await Promise.resolve();
        if (fail) throw new Error('away');
        return reads;
      },
      () => t,
    );
    expect(await Promise.all([read(), read()])).toEqual([1, 1]);
    t = 4_999;
    expect(await read()).toBe(1);
    t = 5_000;
    fail = true;
    await expect(read()).rejects.toThrow('away');
    fail = false;
    expect(await read()).toBe(3);
    expect(reads).toBe(3);
  });
});
