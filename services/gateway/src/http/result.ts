import type { Readable } from 'node:stream';
import type { HttpResult } from './errors';

// What a route's handler answers: its own module, so the route declaration and the idempotency records that replay
// answers both read it without reading each other.

/** A streamed answer (a recording, say) instead of JSON. */
export interface BinaryResult {
  status: number;
  stream: Readable | AsyncIterable<Uint8Array>;
  contentType: string;
  /** Sent as Content-Length when known; otherwise the answer is chunked. */
  length?: number;
  /** Offered as the download's file name (Content-Disposition: attachment). */
  filename?: string;
  headers?: Record<string, string>;
}

export type RouteResult = HttpResult | BinaryResult;

export const isBinary = (r: RouteResult): r is BinaryResult => (r as BinaryResult).stream !== undefined;
