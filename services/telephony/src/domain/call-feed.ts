/** What a tenant can follow of a call, in the order they happen (each at most once per call). */
export const CALL_CHANGES = ['call.started', 'call.ringing', 'call.answered', 'call.ended', 'call.billed'] as const;
export type CallChangeKind = (typeof CALL_CHANGES)[number];
export const isCallChange = (v: string): v is CallChangeKind => (CALL_CHANGES as readonly string[]).includes(v);

/** The call after a change: the gRPC `Call` as announced; only the fields filters and erasure read are typed. */
export interface CallSnapshot {
  id: string;
  direction: string;
  campaignId?: string;
  agentId?: string;
  [field: string]: unknown;
}

/** One change in a tenant's feed, at its place. */
export interface FeedEntry {
  seq: number;
  change: CallChangeKind;
  call: CallSnapshot;
  at: Date;
}

/** How long the feed keeps changes: a stream resumes from up to this far back. */
export const FEED_KEPT_MS = 24 * 3600_000;

/** A stream's position, `<seq>-<ms in base 36>`: its time tells a cursor too old from one not written yet. */
export interface FeedCursor {
  seq: number;
  atMs: number;
}

const CURSOR = /^(\d{1,15})-([0-9a-z]{1,10})$/;

export function parseCursor(text: string): FeedCursor | undefined {
  const m = CURSOR.exec(text);
  if (!m) return undefined;
  const seq = Number(m[1]);
  const atMs = parseInt(m[2]!, 36);
  return Number.isSafeInteger(seq) && Number.isSafeInteger(atMs) ? { seq, atMs } : undefined;
}

export const formatCursor = (c: FeedCursor): string => `${c.seq}-${c.atMs.toString(36)}`;

/** The filters a stream may take: a change passes when the call matches each one given. */
export interface FeedFilter {
  direction?: 'inbound' | 'outbound';
  campaignId?: string;
  agentId?: string;
}

export const passes = ({ call }: FeedEntry, f: FeedFilter): boolean =>
  (f.direction === undefined || call.direction === f.direction) &&
  (f.campaignId === undefined || call.campaignId === f.campaignId) &&
  (f.agentId === undefined || call.agentId === f.agentId);
