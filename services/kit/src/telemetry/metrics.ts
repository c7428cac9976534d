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
 * Business metrics, one convention for every service (billing is the first user):
 *
 *  - names are `voiceapi.<service>.<thing>` in dotted lower case, counters named for what they
 *    count (`voiceapi.billing.charges`), histograms for what they measure, with a UCUM unit
 *    (`{credit}`, `s`, `ms`, `By`);
 *  - attributes are few and bounded (`mode`: live|sandbox, `outcome`, `reason`): never a tenant,
 *    contact, call or key id (unbounded cardinality, and personal data stays out of telemetry);
 *  - gauges are observed: their `observe` runs when the metrics are exported (each export
 *    interval), never otherwise, so what it reads is read only while telemetry is on. It must be
 *    cheap: memory first; a store or Kafka read is cached (`cachedRead`) for at least a few seconds.
 *
 * Without the telemetry SDK (no OTLP endpoint) the instruments are no-ops and cost nothing.
 */
export interface ServiceMetrics {
  counter<A extends Attributes>(thing: string, opts: { description: string; unit?: string }): TypedCounter<A>;
  histogram<A extends Attributes>(
    thing: string,
    opts: { description: string; unit: string; buckets?: number[] },
  ): TypedHistogram<A>;
  /**
   * An observable gauge: `observe` gives its values, one per attribute set, each time metrics are
   * exported. A failing `observe` (thrown or rejected) observes nothing that time and never fails
   * the export. `stop()` on the answer stops observing. Once an attribute set was observed, the
   * SDK exports its last value until the process ends (cumulative temporality), even when it is no
   * longer observed: a gauge keeps giving a value for every attribute set it ever gave (0, not
   * silence, for "none now"), and is stopped only when its process stops.
   */
  gauge<A extends Attributes>(
    thing: string,
    opts: { description: string; unit?: string },
    observe: () => Observations<A> | Promise<Observations<A>>,
  ): ObservedGauge;
}

/** What a gauge's `observe` gives: a value per attribute set. */
export type Observations<A extends Attributes> = Iterable<{ value: number; attributes: A }>;

export interface ObservedGauge {
  /** Stops observing: the gauge's callback is removed. */
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
          // What observing reads (the store, Kafka) is not traced: it is the export's own work.
          // Bounded: a read that waits (a store connection closing at shutdown buffers commands)
          // must not hold up the export, or the process's last flush of every other metric.
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

/**
 * The context key the OpenTelemetry SDK reads to suppress tracing (`suppressTracing` of
 * `@opentelemetry/core`): context keys are `Symbol.for(description)`, so this is the same key.
 */
const SUPPRESS_TRACING = createContextKey('OpenTelemetry SDK Context Key SUPPRESS_TRACING');
const withoutTracing = (ctx: ReturnType<typeof context.active>) => ctx.setValue(SUPPRESS_TRACING, true);

/**
 * A read for a gauge, made at most once per `ttlMs`: within that time its last answer is given
 * again, and reads asked while one is under way share it. A failed read is not kept (the next ask
 * reads again). For gauges whose value comes from the store or Kafka: several gauges fed by one
 * read, and every export of several readers, cost one read per `ttlMs`.
 */
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
