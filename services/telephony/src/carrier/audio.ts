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

/** Samples at each tone's edges that fade in or out (so a tone change does not click). */
const FADE_SAMPLES = 200;

/**
 * One second of tone `f` as 16-bit samples: a whole-hertz tone repeats every second, so recordings are copied from
 * these, only faded edges made per sample (decision 0136: CPU per 10-minute recording from 150 ms to a few).
 */
const toneSeconds = new Map<string, Buffer>();
function toneSecond(f: number, sampleRate: number): Buffer {
  const key = `${sampleRate}:${f}`;
  let second = toneSeconds.get(key);
  if (!second) {
    const sine = sineTable(sampleRate);
    second = Buffer.alloc(sampleRate * 2);
    for (let i = 0; i < sampleRate; i++) second.writeInt16LE(Math.round(sine[(f * i) % sampleRate]! * 8_000), i * 2);
    toneSeconds.set(key, second);
  }
  return second;
}

/** A valid 8 kHz PCM WAV as long as the call, of four seeded tones; made as read, 64 KB at a time, never held whole. */
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
  /** Sample `i` as the tone it is in plays it, faded near the tone's edges. */
  const sample = (i: number) => {
    const f = tones[Math.min(tones.length - 1, Math.floor(i / perTone))]!;
    const pos = i % perTone;
    const fade = Math.min(1, pos / FADE_SAMPLES, (perTone - pos) / FADE_SAMPLES);
    return Math.round(sine[(f * i) % sampleRate]! * 8_000 * fade);
  };
  for (let from = 0; from < samples; from += CHUNK_SAMPLES) {
    const to = Math.min(samples, from + CHUNK_SAMPLES);
    const chunk = Buffer.allocUnsafe((to - from) * 2);
    // Whole stretches copied from each tone's second, from the phase sample `i` is at.
    for (let i = from; i < to;) {
      const t = Math.min(tones.length - 1, Math.floor(i / perTone));
      const second = toneSecond(tones[t]!, sampleRate);
      const phase = i % sampleRate;
      const n = Math.min(to, t === tones.length - 1 ? to : (t + 1) * perTone, i + sampleRate - phase) - i;
      second.copy(chunk, (i - from) * 2, phase * 2, (phase + n) * 2);
      i += n;
    }
    // Then each tone's faded edges that fall in this chunk, sample by sample.
    for (let t = 0; t < tones.length; t++) {
      const start = t * perTone;
      for (const [a, b] of [
        [start, start + FADE_SAMPLES],
        [start + perTone - FADE_SAMPLES, start + perTone],
      ] as const) {
        for (let i = Math.max(a, from); i < Math.min(b, to); i++) chunk.writeInt16LE(sample(i), (i - from) * 2);
      }
    }
    yield chunk;
  }
}
