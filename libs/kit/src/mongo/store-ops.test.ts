import { EventEmitter } from 'node:events';
import { metrics } from '@opentelemetry/api';
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';
import type { mongo } from 'mongoose';
import type { Logger } from '../logger';
import { StoreOpCounter, watchSlowCommands } from './store-ops';

describe('watchSlowCommands', () => {
  const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 60_000 });
  beforeAll(() => metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] })));
  afterAll(() => metrics.disable());

  it('counts a command at or over the count threshold by collection and operation, logs one over the log threshold, and neither for a fast one nor a waiting getMore', async () => {
    const client = new EventEmitter();
    const warn = jest.fn();
    watchSlowCommands(client as unknown as mongo.MongoClient, { warn } as unknown as Logger, {
      logMs: 1_000,
      countMs: 100,
    });
    const start = (requestId: number, commandName: string, command: Record<string, unknown>) =>
      client.emit('commandStarted', { requestId, commandName, command, databaseName: 'leads' });
    start(1, 'insert', { insert: 'contacts' });
    start(2, 'find', { find: 'campaigns' });
    start(3, 'getMore', { getMore: 1, collection: 'outbox' });
    start(4, 'update', { update: 'contacts' });
    start(5, 'find', { find: 'campaigns' });
    start(6, 'find', { find: 'campaigns' });
    client.emit('commandSucceeded', { requestId: 1, commandName: 'insert', duration: 4_200 });
    client.emit('commandSucceeded', { requestId: 2, commandName: 'find', duration: 12 });
    client.emit('commandSucceeded', { requestId: 3, commandName: 'getMore', duration: 30_000 });
    client.emit('commandFailed', { requestId: 4, commandName: 'update', duration: 1_500, failure: new Error('cut') });
    client.emit('commandSucceeded', { requestId: 5, commandName: 'find', duration: 100 });
    client.emit('commandSucceeded', { requestId: 6, commandName: 'find', duration: 99.9 });
    expect(warn.mock.calls).toEqual([
      [{ command: 'insert', collection: 'contacts', ms: 4_200, failed: false }, 'a store command was slow'],
      [{ command: 'update', collection: 'contacts', ms: 1_500, failed: true }, 'a store command was slow'],
    ]);
    await reader.forceFlush();
    const slow = exporter
      .getMetrics()
      .flatMap((r) => r.scopeMetrics.flatMap((s) => s.metrics))
      .find((m) => m.descriptor.name === 'voiceapi.store.slow_commands');
    expect(slow?.descriptor.unit).toBe('{command}');
    expect(
      Object.fromEntries(
        slow!.dataPoints.map((p) => [`${String(p.attributes.collection)} ${String(p.attributes.operation)}`, p.value]),
      ),
    ).toEqual({
      'contacts insert': 1,
      'contacts update': 1,
      'campaigns find': 1,
    });
  });

  it('gives each collection and operation its slow-command series at 0 from its first command, so a panel or alert reading it has data before anything was slow', async () => {
    const client = new EventEmitter();
    const counter = new StoreOpCounter();
    counter.watch(client as unknown as mongo.MongoClient);
    for (const requestId of [1, 2])
      client.emit('commandStarted', {
        requestId,
        commandName: 'find',
        command: { find: 'numbers' },
        databaseName: 'x',
      });
    client.emit('commandStarted', {
      requestId: 3,
      commandName: 'insert',
      command: { insert: 'numbers' },
      databaseName: 'x',
    });
    await reader.forceFlush();
    const points = (name: string) =>
      Object.fromEntries(
        exporter
          .getMetrics()
          .at(-1)!
          .scopeMetrics.flatMap((s) => s.metrics)
          .filter((m) => m.descriptor.name === name)
          .flatMap((m): { attributes: Record<string, unknown>; value: unknown }[] => m.dataPoints)
          .filter((p) => p.attributes.collection === 'numbers')
          .map((p) => [String(p.attributes.operation), p.value]),
      );
    expect(points('voiceapi.store.operations')).toEqual({ find: 2, insert: 1 });
    expect(points('voiceapi.store.slow_commands')).toEqual({ find: 0, insert: 0 });
  });
});
