import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { DomainError, ObjectRangeError, S3ObjectStore } from '../src';
import { s3SettingsFor } from '../../../test/harness/infra';

// The S3 adapter against the harness's real S3 server (versitygw, SigV4): put, ranged get, presigned
// expiry, delete, multipart upload.

const settings = () => s3SettingsFor(`kit-it-${randomBytes(4).toString('hex')}`);

/** A stream of `size` bytes made 64 KB at a time, and the bytes it sends. */
function made(size: number): { stream: Readable; bytes: Buffer } {
  const bytes = randomBytes(size);
  function* chunks() {
    for (let i = 0; i < size; i += 65_536) yield bytes.subarray(i, i + 65_536);
  }
  return { stream: Readable.from(chunks()), bytes };
}

async function read(body: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of body) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

describe('S3ObjectStore against a real S3 server', () => {
  // Multipart from 5 MiB (S3's smallest part), so the test sends a few parts, not gigabytes.
  const store = new S3ObjectStore(settings(), { multipartAboveBytes: 5 * 1024 * 1024, partBytes: 5 * 1024 * 1024 });

  beforeAll(async () => {
    await expect(store.ensureBucket(false)).rejects.toThrow(/has no bucket/);
    await store.ensureBucket(true);
    await store.ensureBucket(true); // there already: nothing to do
  });
  afterAll(() => store.destroy());

  it('puts a streamed object of known length, reads it whole and by range, and says what it is', async () => {
    const { stream, bytes } = made(300_000);
    await store.put('a/streamed.wav', stream, { contentType: 'audio/wav', sizeBytes: bytes.length });
    expect(await store.head('a/streamed.wav')).toEqual({ contentType: 'audio/wav', sizeBytes: 300_000 });
    expect((await store.getAll('a/streamed.wav'))!.equals(bytes)).toBe(true);
    const part = await store.get('a/streamed.wav', { start: 1_000, end: 1_999 });
    expect(part).toMatchObject({ contentLength: 1_000, sizeBytes: 300_000, contentRange: 'bytes 1000-1999/300000' });
    expect((await read(part!.body)).equals(bytes.subarray(1_000, 2_000))).toBe(true);
    const tail = await store.get('a/streamed.wav', { start: 299_990 });
    expect((await read(tail!.body)).equals(bytes.subarray(299_990))).toBe(true);
    await expect(store.get('a/streamed.wav', { start: 300_000 })).rejects.toBeInstanceOf(ObjectRangeError);
  });

  it('answers null for an object that is not there, and deletes one so that it is gone (twice is fine)', async () => {
    expect(await store.get('nothing/here')).toBeNull();
    expect(await store.head('nothing/here')).toBeNull();
    await store.put('b/doc', Buffer.from('hello'), { contentType: 'text/plain', sizeBytes: 5 });
    expect((await store.getAll('b/doc'))!.toString()).toBe('hello');
    await store.delete('b/doc');
    await store.delete('b/doc');
    expect(await store.getAll('b/doc')).toBeNull();
  });

  it('uploads a large object in parts (multipart), reading the stream as it goes', async () => {
    const { stream, bytes } = made(12 * 1024 * 1024 + 123);
    await store.put('c/long.wav', stream, { contentType: 'audio/wav', sizeBytes: bytes.length });
    expect((await store.getAll('c/long.wav'))!.equals(bytes)).toBe(true);
  });

  it('signs read links that carry their authorisation, serve ranges, and stop at their expiry or when altered', async () => {
    await store.put('d/audio', Buffer.from('0123456789'), { contentType: 'audio/wav', sizeBytes: 10 });
    const url = await store.signedReadUrl('d/audio', 2);
    const whole = await fetch(url);
    expect(whole.status).toBe(200);
    expect(await whole.text()).toBe('0123456789');
    const part = await fetch(url, { headers: { Range: 'bytes=2-4' } });
    expect(part.status).toBe(206);
    expect(await part.text()).toBe('234');
    const altered = url.replace('d%2Faudio', 'd%2Faudix').replace('d/audio', 'd/audix');
    expect((await fetch(altered)).status).toBe(403);
    // Unsigned, the object is not readable at all.
    expect((await fetch(url.split('?')[0]!)).status).toBe(403);
    await sleep(3_000);
    expect((await fetch(url)).status).toBe(403);
  });

  it('answers 503 service_unavailable (a domain error) when the store cannot be reached, and its 4xx as they are', async () => {
    const port = await new Promise<number>((resolve) => {
      const srv = createServer();
      srv.listen(0, '127.0.0.1', () => {
        const { port } = srv.address() as AddressInfo;
        srv.close(() => resolve(port));
      });
    });
    const away = new S3ObjectStore({ ...settings(), OBJECT_STORE_ENDPOINT: `http://127.0.0.1:${port}` });
    for (const attempt of [
      () => away.put('k', Buffer.from('x'), { contentType: 'text/plain', sizeBytes: 1 }),
      () => away.get('k'),
      () => away.head('k'),
      () => away.delete('k'),
    ]) {
      const err = await attempt().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(DomainError);
      expect((err as DomainError).reasonCode).toBe('service_unavailable');
    }
    away.destroy();
    // A bucket that does not exist is a fault of the settings, not an outage: not a 503.
    const wrong = new S3ObjectStore({ ...settings(), OBJECT_STORE_BUCKET: `absent-${randomBytes(4).toString('hex')}` });
    const err = await wrong.put('k', Buffer.from('x'), { contentType: 'text/plain', sizeBytes: 1 }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeDefined();
    expect(err).not.toBeInstanceOf(DomainError);
    wrong.destroy();
  });
});
