/**
 * The SLOs' own figures over a stretch of a benchmark, read from a real Prometheus the way the
 * rules read them: each SLI is observability/slos.yaml's error and total queries with the window
 * set to the stretch measured (one definition, not a copy), and the delays behind three of them as
 * p99s of their histograms. Ranges are `anchored` (Prometheus's promql-extended-range-selectors,
 * which the bench's Prometheus enables: `BENCH_PROMETHEUS_FEATURES`): the increase between the
 * samples at the window's two ends, not extrapolated, so two counters pushed by two processes at
 * different moments compare exactly over a window of a few of their pushes.
 */
export const BENCH_PROMETHEUS_FEATURES = ['promql-extended-range-selectors'];
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import type { Prometheus } from '../harness/prometheus';
import { SLO_SPEC } from '../../tools/observability';

interface SloSpec {
  slos: { name: string; objective: number; sli: { events: { error_query: string; total_query: string } } }[];
}

export interface SliFigure {
  slo: string;
  objective: number;
  /** Share of good events over the stretch (NaN: no events). */
  good: number;
  events: number;
}

/** The delays tenants feel, p99 over the stretch, in seconds (histogram buckets: an upper bound). */
const DELAYS = [
  { name: 'lead accepted → first dial', metric: 'voiceapi_telephony_lead_dial_delay_seconds' },
  { name: 'end of call → billing outcome', metric: 'voiceapi_billing_call_settle_delay_seconds' },
  { name: 'event → webhook received (2xx)', metric: 'voiceapi_webhooks_delivery_delay_seconds' },
];

const scalar = async (prom: Prometheus, expr: string) => {
  const r = await prom.query(expr);
  return r.length ? Number(r[0]!.value[1]) : NaN;
};

/** Every SLO's good share over the last `windowS` seconds. */
export async function sliFigures(prom: Prometheus, windowS: number): Promise<SliFigure[]> {
  const spec = parse(readFileSync(SLO_SPEC, 'utf8')) as SloSpec;
  const w = `${Math.max(1, Math.round(windowS))}s`;
  const figures: SliFigure[] = [];
  for (const slo of spec.slos) {
    // rate × window = events; summed over any grouping (route groups) for one figure.
    const errors = await scalar(
      prom,
      `sum(${slo.sli.events.error_query.replaceAll('[{{.window}}]', `[${w}] anchored`)}) * ${windowS}`,
    );
    const total = await scalar(
      prom,
      `sum(${slo.sli.events.total_query.replaceAll('[{{.window}}]', `[${w}] anchored`)}) * ${windowS}`,
    );
    figures.push({
      slo: slo.name,
      objective: slo.objective,
      good: total > 0 ? 1 - (Number.isNaN(errors) ? 0 : errors) / total : NaN,
      events: Number.isNaN(total) ? 0 : total,
    });
  }
  return figures;
}

export async function delayP99s(prom: Prometheus, windowS: number): Promise<{ name: string; p99s: number }[]> {
  const w = `${Math.max(1, Math.round(windowS))}s`;
  return Promise.all(
    DELAYS.map(async (d) => ({
      name: d.name,
      p99s: await scalar(prom, `histogram_quantile(0.99, sum by (le) (rate(${d.metric}_bucket[${w}])))`),
    })),
  );
}

const pctText = (x: number) => (Number.isNaN(x) ? 'no events' : `${(x * 100).toFixed(2)} %`);

/** Rows of a markdown table: one per SLO and one per delay, a column per round. */
export function sliTable(rounds: { figures: SliFigure[]; delays: { name: string; p99s: number }[] }[]): string {
  const head = `| SLO (objective) | ${rounds.map((_, i) => `round ${i + 1}`).join(' | ')} | objective met in every round |\n|---|${rounds.map(() => '---|').join('')}---|`;
  const slos = rounds[0]!.figures.map((f, i) => {
    const cells = rounds.map((r) => `${pctText(r.figures[i]!.good)} of ${Math.round(r.figures[i]!.events)}`);
    const ok = rounds.every((r) => Number.isNaN(r.figures[i]!.good) || r.figures[i]!.good * 100 >= f.objective);
    return `| \`${f.slo}\` (${f.objective} %) | ${cells.join(' | ')} | ${ok ? 'yes' : 'no'} |`;
  });
  const delays = rounds[0]!.delays.map(
    (d, i) =>
      `| ${d.name}, p99 | ${rounds.map((r) => (Number.isNaN(r.delays[i]!.p99s) ? 'none' : `≤ ${r.delays[i]!.p99s.toFixed(2)} s`)).join(' | ')} | |`,
  );
  return [head, ...slos, ...delays].join('\n');
}
