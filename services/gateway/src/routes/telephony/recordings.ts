// The recording routes: `GET /calls/{id}/recording` (a signed link, with a key) and `GET /recordings/{token}`
// (the audio by that link, without a key).
import { notFound } from '@voiceapi/kit/errors';
import { objectStoreUnavailable } from '@voiceapi/kit/objects';
import type { ServiceClients } from '../../clients';
import type { BinaryResult } from '../../http/result';
import { defineRoute } from '../../http/route';
import { z } from '../../http/zod';
import { CallIdParam, RecordingLink, RecordingToken } from './schemas';

/** A short-lived signed link to a call’s recording (`recordings:read`). */
export function recordingLinkRoutes(clients: ServiceClients) {
  const calls = 'Calls';
  return [
    defineRoute({
      method: 'get',
      path: '/calls/{id}/recording',
      tag: calls,
      operationId: 'getCallRecordingLink',
      summary: 'A short-lived signed link to a call’s recording',
      description:
        'The `url` needs no key and works until `expiresAt` (at most 15 minutes); an altered link is refused (403 `recording_link_invalid`), an expired one 410 `recording_link_expired`.',
      scopes: ['recordings:read'],
      params: CallIdParam,
      responses: { 200: { description: 'The signed link', schema: RecordingLink } },
      errors: { 404: 'No such call for this tenant, or it has no recording (`not_found`)' },
      handler: async ({ params }, { call, requestBase }) => {
        const link = await clients.telephony.createRecordingLink({ callId: params.id }, call);
        return {
          status: 200,
          body: { url: `${requestBase}${link.path}`, expiresAt: (link.expireTime ?? new Date()).toISOString() },
        };
      },
    }),
  ];
}

/** Served without a key: the signed token is the authorisation (the kill switch still applies). */
export function recordingRoutes(clients: ServiceClients) {
  return [
    defineRoute({
      method: 'get',
      path: '/recordings/{token}',
      tag: 'Calls',
      operationId: 'getRecording',
      summary: 'A call’s recording, by its signed link',
      description:
        'No key: the link from `GET /calls/{id}/recording` is the authorisation. The audio is streamed with its content type; one byte range (`Range: bytes=…`) is answered 206 with `Content-Range`.',
      params: RecordingToken,
      responses: {
        200: { description: 'The audio', binary: ['audio/wav', 'audio/*'] },
        206: {
          description: 'The byte range asked for (`Range`), with `Content-Range`',
          binary: ['audio/wav', 'audio/*'],
        },
      },
      errors: {
        403: 'The link was altered or truncated (`recording_link_invalid`)',
        404: 'The recording is gone (`not_found`)',
        410: 'The link expired (`recording_link_expired`)',
      },
      headers: RecordingRangeHeader,
      handler: async ({ params }, { call, headers }) => {
        // Asked before the status line: a bad token answers the JSON error.
        const first = await clients.telephony.openRecording({ token: params.token, offset: 0, urlOnly: true }, call);
        const range = headers?.range && SINGLE_RANGE.test(headers.range) ? headers.range : undefined;
        if (first.objectUrl) return fromBucket(first.objectUrl, first.contentType, range);
        // A recording kept in the operational store (before telephony 1.3): read through telephony, whole.
        async function* parts(): AsyncGenerator<Uint8Array> {
          let offset = first.data.length;
          yield first.data;
          while (offset < first.sizeBytes) {
            const next = await clients.telephony.openRecording({ token: params.token, offset, urlOnly: false }, call);
            if (next.data.length === 0) throw new Error('recording ended early');
            offset += next.data.length;
            yield next.data;
          }
        }
        return {
          status: 200,
          contentType: first.contentType,
          length: first.sizeBytes,
          headers: { 'Cache-Control': 'private, no-store' },
          stream: parts(),
        };
      },
    }),
  ];
}

/** One byte range (`bytes=0-99`, `bytes=100-`, `bytes=-500`); any other Range is ignored, as HTTP allows. */
const SINGLE_RANGE = /^bytes=(\d+-\d*|-\d+)$/;
const RecordingRangeHeader = z.object({
  range: z
    .string()
    .optional()
    .describe(
      'One byte range (`bytes=0-1023`): answered 206 with that part. Any other form is ignored (200, the whole recording).',
    ),
});

/**
 * The audio streamed from object storage by the presigned address telephony gave (valid a minute;
 * the store's keys never leave telephony), with the tenant's range. A range the recording cannot
 * satisfy is ignored (HTTP lets a server do so): the whole recording, 200.
 */
async function fromBucket(url: string, contentType: string, range: string | undefined): Promise<BinaryResult> {
  const read = (headers: Record<string, string>) =>
    fetch(url, { headers }).catch((err: unknown) => {
      throw objectStoreUnavailable(err);
    });
  let res = await read(range ? { Range: range } : {});
  if (res.status === 416) {
    await res.body?.cancel();
    res = await read({});
  }
  if ((res.status !== 200 && res.status !== 206) || !res.body) {
    await res.body?.cancel();
    // Gone since telephony signed it (the contact erased): as any recording that is gone.
    if (res.status === 404) throw notFound('recording');
    throw objectStoreUnavailable(
      Object.assign(new Error(`the object store answered ${res.status} for a recording`), {
        $metadata: { httpStatusCode: res.status >= 500 ? res.status : 502 },
      }),
    );
  }
  const contentRange = res.headers.get('content-range');
  return {
    status: res.status,
    contentType,
    length: Number(res.headers.get('content-length')),
    headers: {
      'Cache-Control': 'private, no-store',
      'Accept-Ranges': 'bytes',
      ...(res.status === 206 && contentRange && { 'Content-Range': contentRange }),
    },
    stream: res.body as unknown as AsyncIterable<Uint8Array>,
  };
}
