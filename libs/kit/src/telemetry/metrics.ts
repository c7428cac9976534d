import {
  context,
  createContextKey,
  diag,
  metrics,
  type Attributes,
  type Counter,
  type Histogram,
  type ObservableCallback,
} from '@opentelemetry/api';

/**
 * Business metrics, named `voiceapi.<service>.<thing>` with a UCUM unit. Attributes are few and bounded:
 * never a tenant, contact, call or key id (cardinality, and personal data stays out of telemetry).
 * A gauge's `observe` runs only at export, so it must be cheap (store or Kafka reads via `cachedRead`).
 * Without the telemetry SDK (no OTLP endpoint) the instruments are no-ops.
 */
export interface ServiceMetrics {
  counter<A extends Attributes>(thing: string, opts: { description: string; unit?: string }): TypedCounter<A>;
  histogram<A extends Attributes>(
    thing: string,
    opts: { description: string; unit: string; buckets?: number[] },
  ): TypedHistogram<A>;
  /**
   * An observable gauge; a failing `observe` skips that export. The SDK keeps exporting the last value of
   * every attribute set ever observed (cumulative), so give 0 for "none now", and stop only with the process.
   */
  gauge<A extends Attributes>(
    thing: string,
    opts: { description: string; unit?: string },
    observe: () => Observations<A> | Promise<Observations<A>>,
  ): ObservedGauge;
}

export type Observations<A extends Attributes> = Iterable<{ value: number; attributes: A }>;

export interface ObservedGauge {
  stop(): void;
}

export interface TypedCounter<A extends Attributes> {
  add(value: number, attributes: A): void;
}

export interface TypedHistogram<A extends Attributes> {
  record(value: number, attributes: A): void;
}

/** How long a gauge's observation may take before the export goes on without it. */
const OBSERVE_TIMEOUT_MS = 2_000;

const THING = /^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$/;

export function serviceMetrics(service: string): ServiceMetrics {
  const meter = metrics.getMeter(`voiceapi.${service}`);
  const name = (thing: string) => {
    if (!THING.test(thing)) throw new Error(`metric name "${thing}" must be dotted lower case`);
    return `voiceapi.${service}.${thing}`;
  };
  return {
    counter: <A extends Attributes>(thing: string, opts: { description: string; unit?: string }) => {
      const c: Counter<A> = meter.createCounter<A>(name(thing), {
        description: opts.description,
        ...(opts.unit && { unit: opts.unit }),
      });
      return { add: (value: number, attributes: A) => c.add(value, attributes) };
    },
    histogram: <A extends Attributes>(
      thing: string,
      opts: { description: string; unit: string; buckets?: number[] },
    ) => {
      const h: Histogram<A> = meter.createHistogram<A>(name(thing), {
        description: opts.description,
        unit: opts.unit,
        ...(opts.buckets && { advice: { explicitBucketBoundaries: opts.buckets } }),
      });
      return { record: (value: number, attributes: A) => h.record(value, attributes) };
    },
    gauge: <A extends Attributes>(
      thing: string,
      opts: { description: string; unit?: string },
      observe: () => Observations<A> | Promise<Observations<A>>,
    ) => {
      const full = name(thing);
      const g = meter.createObservableGauge<A>(full, {
        description: opts.description,
        ...(opts.unit && { unit: opts.unit }),
      });
      const callback: ObservableCallback<A> = async (result) => {
        let timer: NodeJS.Timeout | undefined;
        try {
          // Untraced (the export's own work), and bounded: a store closing at shutdown buffers commands,
          // which must not hold up the last flush of every other metric.
          const values = await Promise.race([
            context.with(withoutTracing(context.active()), observe),
            new Promise<never>((_, reject) => {
              timer = setTimeout(
                () => reject(new Error(`no answer within ${OBSERVE_TIMEOUT_MS} ms`)),
                OBSERVE_TIMEOUT_MS,
              ).unref();
            }),
          ]);
          for (const { value, attributes } of values) result.observe(value, attributes);
        } catch (err) {
          diag.warn(`gauge ${full} could not be observed: ${String(err)}`);
        } finally {
          clearTimeout(timer);
        }
      };
      g.addCallback(callback);
      return { stop: () => g.removeCallback(callback) };
    },
  };
}

/** `@opentelemetry/core`'s suppress-tracing key: context keys are `Symbol.for(description)`, so this is it. */
const SUPPRESS_TRACING = createContextKey('OpenTelemetry SDK Context Key SUPPRESS_TRACING');
const withoutTracing = (ctx: ReturnType<typeof context.active>) => ctx.setValue(SUPPRESS_TRACING, true);

/** A gauge's read made at most once per `ttlMs`, shared by concurrent asks; a failed read is not kept. */
export function cachedRead<T>(ttlMs: number, read: () => Promise<T>, now: () => number = Date.now): () => Promise<T> {
  let last: { at: number; value: T } | undefined;
  let pending: Promise<T> | undefined;
  return () => {
    if (last && now() - last.at < ttlMs) return Promise.resolve(last.value);
    pending ??= read()
      .then((value) => {
        last = { at: now(), value };
        return value;
      })
      .finally(() => (pending = undefined));
    return pending;
  };
}
