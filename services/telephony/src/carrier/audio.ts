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

/**
 * A small, valid WAV file (RIFF, PCM 16-bit mono, 8 kHz: what telephony records): a few tones
 * whose pitches follow a seed, so each call's recording differs and any player opens it.
 * The simulator makes one per call, so the sines come from a table (whole-hertz pitches make it
 * exact) instead of a `Math.sin` per sample: that was a tenth of telephony's CPU under load.
 */
export function toneWav(seed: number, seconds = 2, sampleRate = 8_000): Buffer {
  const samples = Math.round(seconds * sampleRate);
  const file = Buffer.alloc(44 + samples * 2);
  const sine = sineTable(sampleRate);
  const tones = [440, 523, 659, 784].map((f, i) => f + ((seed >>> (i * 4)) & 0xf) * 5);
  const perTone = Math.ceil(samples / tones.length);
  const view = new DataView(file.buffer, file.byteOffset, file.byteLength);
  for (let i = 0; i < samples; i++) {
    const f = tones[Math.min(tones.length - 1, Math.floor(i / perTone))]!;
    // A short fade at each tone's edges avoids clicks.
    const pos = i % perTone;
    const fade = Math.min(1, pos / 200, (perTone - pos) / 200);
    view.setInt16(44 + i * 2, Math.round(sine[(f * i) % sampleRate]! * 8_000 * fade), true);
  }
  file.write('RIFF', 0, 'ascii');
  file.writeUInt32LE(36 + samples * 2, 4);
  file.write('WAVE', 8, 'ascii');
  file.write('fmt ', 12, 'ascii');
  file.writeUInt32LE(16, 16); // fmt chunk size
  file.writeUInt16LE(1, 20); // PCM
  file.writeUInt16LE(1, 22); // mono
  file.writeUInt32LE(sampleRate, 24);
  file.writeUInt32LE(sampleRate * 2, 28); // byte rate
  file.writeUInt16LE(2, 32); // block align
  file.writeUInt16LE(16, 34); // bits per sample
  file.write('data', 36, 'ascii');
  file.writeUInt32LE(samples * 2, 40);
  return file;
}
