import { scenarioOf, SimulatorCarrier } from './simulator';

const out = (to: string) => ({
  callId: `c-${to}`,
  direction: 'outbound' as const,
  from: null,
  to,
  maxCallSeconds: 600,
});

describe('carrier simulator', () => {
  it.each([
    ['+14155550000', 'completed', 42, false],
    ['+14155550001', 'no_answer', 0, false],
    ['+14155550002', 'busy', 0, false],
    ['+14155550003', 'failed', 0, false],
    ['+14155550004', 'voicemail', 20, false],
    ['+14155550005', 'completed', 30, true],
  ] as const)(
    '%s ends %s after %i s (opt-out %s), as the operator table says',
    async (to, outcome, seconds, optOut) => {
      const carrier = new SimulatorCarrier(100_000);
      const answered: Date[] = [];
      const r = await carrier.place(out(to), { answered: async (at) => void answered.push(at) });
      expect(r).toMatchObject({ outcome, durationSeconds: seconds, cutAtLimit: false });
      expect(answered).toHaveLength(seconds > 0 ? 1 : 0);
      expect(r.analysis?.optOut ?? false).toBe(optOut);
      // Answered calls come with a transcript, an analysis and a real WAV file; others with none.
      expect(Boolean(r.transcript?.length)).toBe(seconds > 0);
      if (seconds > 0) {
        const chunks: Buffer[] = [];
        for await (const c of r.recording!.open()) chunks.push(c as Buffer);
        const wav = Buffer.concat(chunks);
        // As long as the talk time: 8 kHz, 16-bit.
        expect(r.recording).toMatchObject({ durationSeconds: seconds, sizeBytes: 44 + seconds * 16_000 });
        expect(wav.length).toBe(r.recording!.sizeBytes);
        expect(r.recording!.contentType).toBe('audio/wav');
        expect(wav.toString('ascii', 0, 4)).toBe('RIFF');
        expect(wav.toString('ascii', 8, 12)).toBe('WAVE');
        expect(wav.readUInt32LE(4)).toBe(wav.length - 8);
        expect(wav.readUInt32LE(40)).toBe(wav.length - 44);
      } else {
        expect(r.recording).toBeUndefined();
      }
    },
  );

  it('gives any other number 15–180 s by a hash of it, the same every time', () => {
    const seen = new Set<number>();
    for (let i = 0; i < 200; i++) {
      const s = scenarioOf(out(`+1415555${String(1000 + i).padStart(4, '0')}`));
      expect(s.outcome).toBe('completed');
      expect(s.talkSeconds).toBeGreaterThanOrEqual(15);
      expect(s.talkSeconds).toBeLessThanOrEqual(180);
      seen.add(s.talkSeconds);
    }
    expect(seen.size).toBeGreaterThan(50);
    expect(scenarioOf(out('+14155551234'))).toEqual(scenarioOf(out('+14155551234')));
  });

  it('cuts a call at maxCallSeconds and says so', async () => {
    const r = await new SimulatorCarrier(100_000).place(
      { ...out('+14155550000'), maxCallSeconds: 30 },
      { answered: async () => undefined },
    );
    expect(r).toMatchObject({ outcome: 'completed', durationSeconds: 30, cutAtLimit: true });
  });

  it('reports simulated durations, not wall time, however fast it runs', async () => {
    const fast = new SimulatorCarrier(1_000);
    const t0 = Date.now();
    const r = await fast.place(out('+14155550000'), { answered: async () => undefined });
    expect(r.durationSeconds).toBe(42);
    expect(Date.now() - t0).toBeLessThan(5_000);
  });

  it('recovers a call only once its end is due, with the same result', () => {
    const carrier = new SimulatorCarrier(10);
    const started = new Date('2026-11-22T12:00:00Z');
    // 3 s ringing + 42 s talk at 10× = 4.5 s of wall time.
    expect(carrier.recover(out('+14155550000'), started, new Date(started.getTime() + 4_000))).toBeUndefined();
    const r = carrier.recover(out('+14155550000'), started, new Date(started.getTime() + 4_600));
    expect(r).toMatchObject({ outcome: 'completed', durationSeconds: 42 });
    expect(carrier.recover(out('+14155550001'), started, new Date(started.getTime() + 400))).toMatchObject({
      outcome: 'no_answer',
      durationSeconds: 0,
    });
  });

  it('inbound: the caller stays as long as asked; 0 s is a call nobody answered', () => {
    expect(
      scenarioOf({ direction: 'inbound', to: '+14155550100', from: '+14155550199', talkSeconds: 75 }),
    ).toMatchObject({ outcome: 'completed', talkSeconds: 75 });
    expect(
      scenarioOf({ direction: 'inbound', to: '+14155550100', from: '+14155550199', talkSeconds: 0 }),
    ).toMatchObject({ outcome: 'no_answer', talkSeconds: 0 });
  });
});
