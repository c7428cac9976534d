/**
 * A query a store runs, declared beside its indexes; `filtered` fields are matched on the rows the index found.
 * The test harness fails on any query no declared shape covers (query-check.ts).
 */
export interface QueryShape {
  name: string;
  equality: readonly string[];
  sort?: Readonly<Record<string, 1 | -1>>;
  range?: readonly string[];
  filtered?: readonly string[];
}
