import { toneWavStream, wavBytes } from './audio';

async function whole(seed: number, seconds: number): Promise<{ wav: Buffer; chunks: number[] }> {
  const chunks: Buffer[] = [];
  for await (const c of toneWavStream(seed, seconds, 8_000)) chunks.push(c as Buffer);
  return { wav: Buffer.concat(chunks), chunks: chunks.map((c) => c.length) };
}

describe('toneWavStream', () => {
  it('holds four tones whose pitches follow the seed, with faded edges, as 16-bit samples', async () => {
    const seed = 0x1234;
    const { wav } = await whole(seed, 2);
    expect(wav.length).toBe(44 + 32_000);
    expect(wav.length).toBe(wavBytes(2));
    expect(wav.readUInt32LE(24)).toBe(8_000);
    expect(wav.readUInt16LE(34)).toBe(16);
    expect(wav.readUInt32LE(40)).toBe(32_000);
    // The second tone: 523 Hz plus 5 × the seed's second nibble (3); 4,000 samples each.
    const f = 523 + 3 * 5;
    for (const i of [4_500, 5_001, 6_123, 7_700]) {
      const pos = i % 4_000;
      const fade = Math.min(1, pos / 200, (4_000 - pos) / 200);
      expect(wav.readInt16LE(44 + i * 2)).toBe(Math.round(Math.sin((2 * Math.PI * f * i) / 8_000) * 8_000 * fade));
    }
    // The first sample of each tone is silent (the fade), and another seed sounds different.
    expect(wav.readInt16LE(44 + 4_000 * 2)).toBe(0);
    expect((await whole(seed + 1, 2)).wav.equals(wav)).toBe(false);
  });

  it('is, sample for sample, the seed’s four tones with faded edges, whatever the length (chunks across tone edges)', async () => {
    for (const [seed, seconds] of [
      [0xbeef, 1],
      [0x5a5a, 7],
      [0x0f0f, 61],
    ] as const) {
      const { wav } = await whole(seed, seconds);
      const samples = seconds * 8_000;
      const perTone = Math.ceil(samples / 4);
      const tones = [440, 523, 659, 784].map((f, i) => f + ((seed >>> (i * 4)) & 0xf) * 5);
      let wrong = 0;
      for (let i = 0; i < samples; i++) {
        const f = tones[Math.min(3, Math.floor(i / perTone))]!;
        const pos = i % perTone;
        const fade = Math.min(1, pos / 200, (perTone - pos) / 200);
        const want = Math.round(Math.sin((2 * Math.PI * ((f * i) % 8_000)) / 8_000) * 8_000 * fade);
        if (wav.readInt16LE(44 + i * 2) !== want) wrong++;
      }
      expect({ seed, seconds, wrong }).toEqual({ seed, seconds, wrong: 0 });
    }
  });

  it('is as long as the call, made in chunks of at most 64 KB: three minutes are 2.88 MB of audio', async () => {
    const { wav, chunks } = await whole(7, 180);
    expect(wav.length).toBe(44 + 180 * 8_000 * 2);
    expect(wav.length).toBe(wavBytes(180));
    expect(Math.max(...chunks)).toBeLessThanOrEqual(64 * 1024);
  });
});
