import { metrics, type Attributes, type Counter, type Histogram } from '@opentelemetry/api';

/**
 * Business metrics, one convention for every service (billing is the first user):
 *
 *  - names are `voiceapi.<service>.<thing>` in dotted lower case, counters named for what they
 *    count (`voiceapi.billing.charges`), histograms for what they measure, with a UCUM unit
 *    (`{credit}`, `s`, `ms`, `By`);
 *  - attributes are few and bounded (`mode`: live|sandbox, `outcome`, `reason`): never a tenant,
 *    contact, call or key id (unbounded cardinality, and personal data stays out of telemetry).
 *
 * Without the telemetry SDK (no OTLP endpoint) the instruments are no-ops and cost nothing.
 */
export interface ServiceMetrics {
  counter<A extends Attributes>(thing: string, opts: { description: string; unit?: string }): TypedCounter<A>;
  histogram<A extends Attributes>(thing: string, opts: { description: string; unit: string; buckets?: number[] }): TypedHistogram<A>;
}

export interface TypedCounter<A extends Attributes> {
  add(value: number, attributes: A): void;
}

export interface TypedHistogram<A extends Attributes> {
  record(value: number, attributes: A): void;
}

const THING = /^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$/;

export function serviceMetrics(service: string): ServiceMetrics {
  const meter = metrics.getMeter(`voiceapi.${service}`);
  const name = (thing: string) => {
    if (!THING.test(thing)) throw new Error(`metric name "${thing}" must be dotted lower case`);
    return `voiceapi.${service}.${thing}`;
  };
  return {
    counter: <A extends Attributes>(thing: string, opts: { description: string; unit?: string }) => {
      const c: Counter<A> = meter.createCounter<A>(name(thing), { description: opts.description, ...(opts.unit && { unit: opts.unit }) });
      return { add: (value: number, attributes: A) => c.add(value, attributes) };
    },
    histogram: <A extends Attributes>(thing: string, opts: { description: string; unit: string; buckets?: number[] }) => {
      const h: Histogram<A> = meter.createHistogram<A>(name(thing), {
        description: opts.description,
        unit: opts.unit,
        ...(opts.buckets && { advice: { explicitBucketBoundaries: opts.buckets } }),
      });
      return { record: (value: number, attributes: A) => h.record(value, attributes) };
    },
  };
}
