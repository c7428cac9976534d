export type DoNotCallList = 'tenant' | 'platform';

export interface DoNotCallEntry {
  phone: string;
  list: DoNotCallList;
  /** `operator`, or `opted_out` when a called party asked on a call. */
  source: string;
  createdAt: Date;
}
