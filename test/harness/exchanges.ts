import { SPAN_KIND, type CollectedPoint, type CollectedSpan } from './otlp-collector';

/**
 * Which processes exchanged messages, read from their spans (not assumed from what the test did):
 * - a gRPC pair `caller→callee` is a server span of the callee whose parent is a client span of the
 *   caller (grpc-js's instrumentation carries the client span in the call's metadata); an answer of
 *   UNIMPLEMENTED (a peer without the RPC) is no exchange;
 * - an event pair `producer→topic→consumer` is a consumer's `process` span whose parent (one message
 *   at a time) or link (a batch) is the producer's `send` span of that topic (kafkajs's
 *   instrumentation carries it in the message's headers).
 */
export interface Claimed {
  grpc: [caller: string, callee: string][];
  events: [producer: string, topic: string, consumer: string][];
}

const UNIMPLEMENTED = 12;
export const grpcKey = (caller: string, callee: string) => `${caller}→${callee}`;
export const eventKey = (producer: string, topic: string, consumer: string) => `${producer}→${topic}→${consumer}`;

/** Messages exchanged per pair, by `grpcKey` and `eventKey`. */
export function exchanges(spans: CollectedSpan[]): { grpc: Map<string, number>; events: Map<string, number> } {
  const byId = new Map(spans.map((s) => [s.spanId, s]));
  const grpc = new Map<string, number>();
  const events = new Map<string, number>();
  const add = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + 1);
  for (const s of spans) {
    if (s.kind === SPAN_KIND.server && typeof s.attributes['rpc.service'] === 'string') {
      const client = byId.get(s.parentSpanId);
      if (client?.kind !== SPAN_KIND.client || s.attributes['rpc.grpc.status_code'] === UNIMPLEMENTED) continue;
      if (String(s.attributes['rpc.service']).startsWith('grpc.health')) continue;
      add(grpc, grpcKey(client.service, s.service));
    } else if (s.kind === SPAN_KIND.consumer && s.name.startsWith('process ')) {
      for (const id of [s.parentSpanId, ...s.links]) {
        const send = byId.get(id);
        if (send?.kind !== SPAN_KIND.producer) continue;
        const topic = String(send.attributes['messaging.destination.name'] ?? '');
        add(events, eventKey(send.service, topic, s.service));
      }
    }
  }
  return { grpc, events };
}

/** Fallbacks counted in a window: each series' growth from its value before (a restarted process starts again at 0). */
export function fallbacksBetween(before: CollectedPoint[], after: CollectedPoint[]): Map<string, number> {
  const last = (points: CollectedPoint[]) => {
    const m = new Map<string, number>();
    for (const p of points.filter((x) => x.metric === 'voiceapi.fallbacks'))
      m.set(`${p.service}: ${p.attributes.dependency} ${p.attributes.operation} (${p.attributes.reason})`, p.value);
    return m;
  };
  const was = last(before);
  const out = new Map<string, number>();
  for (const [k, v] of last(after)) {
    const grew = v >= (was.get(k) ?? 0) ? v - (was.get(k) ?? 0) : v;
    if (grew > 0) out.set(k, grew);
  }
  return out;
}

/**
 * What a phase failed to show: a claimed pair that exchanged nothing, a fallback not expected. An
 * event pair is its producer and consumer: an older release may carry the same events on the topic
 * it had then (billing before 1.2.0 wrote `billing.v1`; its readers went in leads 1.3.2 and
 * webhooks 1.3.0, docs/operations.md "Scheduled removals").
 */
export function phaseProblems(
  claimed: Claimed,
  seen: { grpc: Map<string, number>; events: Map<string, number> },
  fallbacks: Map<string, number>,
  expectedFallbacks: RegExp[] = [],
): string[] {
  const problems: string[] = [];
  for (const [caller, callee] of claimed.grpc)
    if (!seen.grpc.get(grpcKey(caller, callee))) problems.push(`silent gRPC pair: ${grpcKey(caller, callee)}`);
  const eventPairs = new Set([...seen.events.keys()].map((k) => k.replace(/→.*→/, '→')));
  for (const [producer, topic, consumer] of claimed.events)
    if (!seen.events.get(eventKey(producer, topic, consumer)) && !eventPairs.has(`${producer}→${consumer}`))
      problems.push(`silent event pair: ${eventKey(producer, topic, consumer)}`);
  for (const [k, n] of fallbacks)
    if (!expectedFallbacks.some((e) => e.test(k))) problems.push(`unexpected fallback: ${k} ×${n}`);
  return problems;
}

/** Pairs seen that the claims neither make nor excuse: the claims must keep up with the code. */
export function unclaimed(
  claimed: Claimed,
  excused: string[],
  seen: { grpc: Map<string, number>; events: Map<string, number> },
) {
  const known = new Set([
    ...claimed.grpc.map(([a, b]) => grpcKey(a, b)),
    ...claimed.events.map(([p, t, c]) => eventKey(p, t, c)),
    ...excused,
  ]);
  return [...seen.grpc.keys(), ...seen.events.keys()].filter((k) => !known.has(k));
}
