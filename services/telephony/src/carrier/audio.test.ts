import { toneWav } from './audio';

describe('toneWav', () => {
  it('holds four tones whose pitches follow the seed, with faded edges, as 16-bit samples', () => {
    const seed = 0x1234;
    const wav = toneWav(seed, 2, 8_000);
    expect(wav.length).toBe(44 + 32_000);
    expect(wav.readUInt32LE(24)).toBe(8_000);
    expect(wav.readUInt16LE(34)).toBe(16);
    // The second tone: 523 Hz plus 5 × the seed's second nibble (3); 4,000 samples each.
    const f = 523 + 3 * 5;
    for (const i of [4_500, 5_001, 6_123, 7_700]) {
      const pos = i % 4_000;
      const fade = Math.min(1, pos / 200, (4_000 - pos) / 200);
      expect(wav.readInt16LE(44 + i * 2)).toBe(Math.round(Math.sin((2 * Math.PI * f * i) / 8_000) * 8_000 * fade));
    }
    // The first sample of each tone is silent (the fade), and another seed sounds different.
    expect(wav.readInt16LE(44 + 4_000 * 2)).toBe(0);
    expect(toneWav(seed + 1).equals(wav)).toBe(false);
  });
});
