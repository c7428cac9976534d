import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Logger } from '@voiceapi/kit/service';
import type { Response } from 'express';
import { errorResult, send } from './errors';
import type { BinaryResult } from './result';

/**
 * Streams a binary answer. The first chunk is read before the status line is written, so a source
 * that fails at once (the service says not_found) still gets the documented JSON error; a failure
 * after that can only cut the answer short (the client sees an incomplete body), and is logged.
 */
export async function sendBinary(res: Response, result: BinaryResult, log: Logger, requestId: string): Promise<void> {
  const source = result.stream[Symbol.asyncIterator]() as AsyncIterator<Uint8Array>;
  let first: IteratorResult<Uint8Array>;
  try {
    first = await source.next();
  } catch (err) {
    return send(res, errorResult(err, log, requestId));
  }
  if (result.headers) for (const [name, value] of Object.entries(result.headers)) res.setHeader(name, value);
  res.statusCode = result.status;
  res.setHeader('Content-Type', result.contentType);
  res.setHeader('X-Content-Type-Options', 'nosniff');
  if (result.length !== undefined) res.setHeader('Content-Length', result.length);
  if (result.filename !== undefined) res.setHeader('Content-Disposition', attachment(result.filename));
  if (first.done) {
    res.end();
    return;
  }
  async function* rest(): AsyncGenerator<Uint8Array> {
    yield first.value;
    for (let next = await source.next(); !next.done; next = await source.next()) yield next.value;
  }
  try {
    // pipeline handles backpressure and ends the source when the client goes away.
    await pipeline(Readable.from(rest(), { objectMode: false }), res);
  } catch (err) {
    if (!res.destroyed) res.destroy();
    log.warn({ err, requestId }, 'streamed answer cut short');
  } finally {
    await source.return?.();
  }
}

/** `attachment; filename="…"` with a plain-ASCII fallback and the UTF-8 name (RFC 6266). */
function attachment(filename: string): string {
  const ascii = filename.replace(/[^\x20-\x7e]|["\\]/g, '_');
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(filename)}`;
}
