/**
 * A small, valid WAV file (RIFF, PCM 16-bit mono, 8 kHz: what telephony records): a few tones
 * whose pitches follow a seed, so each call's recording differs and any player opens it.
 */
export function toneWav(seed: number, seconds = 2, sampleRate = 8_000): Buffer {
  const samples = Math.round(seconds * sampleRate);
  const data = Buffer.alloc(samples * 2);
  const tones = [440, 523, 659, 784].map((f, i) => f + ((seed >>> (i * 4)) & 0xf) * 5);
  const perTone = Math.ceil(samples / tones.length);
  for (let i = 0; i < samples; i++) {
    const f = tones[Math.min(tones.length - 1, Math.floor(i / perTone))]!;
    // A short fade at each tone's edges avoids clicks.
    const pos = i % perTone;
    const fade = Math.min(1, pos / 200, (perTone - pos) / 200);
    data.writeInt16LE(Math.round(Math.sin((2 * Math.PI * f * i) / sampleRate) * 8_000 * fade), i * 2);
  }
  const header = Buffer.alloc(44);
  header.write('RIFF', 0, 'ascii');
  header.writeUInt32LE(36 + data.length, 4);
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
  header.writeUInt32LE(data.length, 40);
  return Buffer.concat([header, data]);
}
