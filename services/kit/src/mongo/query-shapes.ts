/**
 * A query a store runs, declared beside the indexes that serve it. `equality` fields are
 * matched exactly, `sort` orders the result, `range` fields are bounded ($gt, $lt, $in…);
 * `filtered` fields are matched too, but on the rows the index found (not part of the index).
 * The test harness fails on a query a process sends that no declared shape covers (query-check.ts).
 */
export interface QueryShape {
  name: string;
  equality: readonly string[];
  sort?: Readonly<Record<string, 1 | -1>>;
  range?: readonly string[];
  filtered?: readonly string[];
}
