import { Readable } from 'node:stream';

/** One period of a sine at 1 Hz, `sampleRate` samples long: tone `f`'s sample `i` is entry `(f · i) mod sampleRate`. */
const sineTables = new Map<number, Float64Array>();
function sineTable(sampleRate: number): Float64Array {
  let table = sineTables.get(sampleRate);
  if (!table) {
    table = new Float64Array(sampleRate);
    for (let k = 0; k < sampleRate; k++) table[k] = Math.sin((2 * Math.PI * k) / sampleRate);
    sineTables.set(sampleRate, table);
  }
  return table;
}

const HEADER_BYTES = 44;
/** Samples made per chunk of the stream: 64 KB of audio, whatever the call's length. */
const CHUNK_SAMPLES = 32 * 1024;

/** The size of a WAV of `seconds` (PCM 16-bit mono): what a stream of it will send. */
export const wavBytes = (seconds: number, sampleRate = 8_000): number =>
  HEADER_BYTES + Math.round(seconds * sampleRate) * 2;

/**
 * A valid WAV file (RIFF, PCM 16-bit mono, 8 kHz: what telephony records) as long as the call:
 * four tones whose pitches follow a seed, so each call's recording differs and any player opens
 * it. Made as it is read, 64 KB at a time, so an hour's call (58 MB) is never held whole. The
 * sines come from a table (whole-hertz pitches make it exact) instead of a `Math.sin` per sample:
 * that was a tenth of telephony's CPU under load.
 */
export function toneWavStream(seed: number, seconds: number, sampleRate = 8_000): Readable {
  return Readable.from(toneWavChunks(seed, seconds, sampleRate), { objectMode: false });
}

function* toneWavChunks(seed: number, seconds: number, sampleRate: number): Generator<Buffer> {
  const samples = Math.round(seconds * sampleRate);
  const header = Buffer.alloc(HEADER_BYTES);
  header.write('RIFF', 0, 'ascii');
  header.writeUInt32LE(36 + samples * 2, 4);
  header.write('WAVE', 8, 'ascii');
  header.write('fmt ', 12, 'ascii');
  header.writeUInt32LE(16, 16); // fmt chunk size
  header.writeUInt16LE(1, 20); // PCM
  header.writeUInt16LE(1, 22); // mono
  header.writeUInt32LE(sampleRate, 24);
  header.writeUInt32LE(sampleRate * 2, 28); // byte rate
  header.writeUInt16LE(2, 32); // block align
  header.writeUInt16LE(16, 34); // bits per sample
  header.write('data', 36, 'ascii');
  header.writeUInt32LE(samples * 2, 40);
  yield header;
  const sine = sineTable(sampleRate);
  const tones = [440, 523, 659, 784].map((f, i) => f + ((seed >>> (i * 4)) & 0xf) * 5);
  const perTone = Math.max(1, Math.ceil(samples / tones.length));
  for (let from = 0; from < samples; from += CHUNK_SAMPLES) {
    const n = Math.min(CHUNK_SAMPLES, samples - from);
    const chunk = Buffer.alloc(n * 2);
    for (let j = 0; j < n; j++) {
      const i = from + j;
      const f = tones[Math.min(tones.length - 1, Math.floor(i / perTone))]!;
      // A short fade at each tone's edges avoids clicks.
      const pos = i % perTone;
      const fade = Math.min(1, pos / 200, (perTone - pos) / 200);
      chunk.writeInt16LE(Math.round(sine[(f * i) % sampleRate]! * 8_000 * fade), j * 2);
    }
    yield chunk;
  }
}
