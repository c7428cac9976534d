import { parseWindowSetting, windowDecision, windowProblems, WEEKDAYS, type CallingWindow } from './calling-window';

const LA = 'America/Los_Angeles';
const NY = 'America/New_York';
const DAYTIME: CallingWindow = { start: '08:00', end: '21:00' };
const at = (iso: string) => new Date(iso);
/** The decision with nextOpenAt as an ISO string, for readable expectations. */
const decide = (w: Parameters<typeof windowDecision>[0], zones: string[], now: string) => {
  const { open, nextOpenAt } = windowDecision(w, zones, at(now));
  return nextOpenAt ? { open, nextOpenAt: nextOpenAt.toISOString() } : { open };
};

describe('windowDecision', () => {
  // Summer: New York is UTC−4, Los Angeles UTC−7. 2026-06-17 is a Wednesday.
  it('checks the window in the called party’s zone', () => {
    expect(decide(DAYTIME, [NY], '2026-06-17T12:00:00Z')).toEqual({ open: true });
    expect(decide(DAYTIME, [LA], '2026-06-17T12:00:00Z')).toEqual({
      open: false,
      nextOpenAt: '2026-06-17T15:00:00.000Z',
    });
    expect(decide(DAYTIME, [NY], '2026-06-17T11:59:00Z')).toEqual({
      open: false,
      nextOpenAt: '2026-06-17T12:00:00.000Z',
    });
    // 20:59 is inside, 21:00 is not: the window is [start, end).
    expect(decide(DAYTIME, [NY], '2026-06-18T00:59:59Z')).toEqual({ open: true });
    expect(decide(DAYTIME, [NY], '2026-06-18T01:00:00Z')).toEqual({
      open: false,
      nextOpenAt: '2026-06-18T12:00:00.000Z',
    });
    expect(decide(DAYTIME, [LA], '2026-06-18T01:00:00Z')).toEqual({ open: true });
    expect(decide(DAYTIME, [LA], '2026-06-18T04:00:00Z')).toEqual({
      open: false,
      nextOpenAt: '2026-06-18T15:00:00.000Z',
    });
  });

  it('gives the exact opening minute, seconds 0, when asked mid-minute', () => {
    expect(decide(DAYTIME, [NY], '2026-06-17T11:59:30.250Z')).toEqual({
      open: false,
      nextOpenAt: '2026-06-17T12:00:00.000Z',
    });
  });

  it('waits for the listed local days: a Saturday lead with a weekday window goes to Monday 08:00', () => {
    const weekdays: CallingWindow = { ...DAYTIME, days: ['mon', 'tue', 'wed', 'thu', 'fri'] };
    expect(decide(weekdays, [NY], '2026-06-20T14:00:00Z')).toEqual({
      open: false,
      nextOpenAt: '2026-06-22T12:00:00.000Z',
    });
    // Friday 21:30 in New York, already Saturday in UTC.
    expect(decide(weekdays, [NY], '2026-06-20T01:30:00Z')).toEqual({
      open: false,
      nextOpenAt: '2026-06-22T12:00:00.000Z',
    });
    // Friday 20:00 in Los Angeles is Saturday 03:00 in UTC, and still a weekday there.
    expect(decide(weekdays, [LA], '2026-06-20T03:00:00Z')).toEqual({ open: true });
    expect(decide({ ...DAYTIME, days: ['sun'] }, [NY], '2026-06-17T12:00:00Z')).toEqual({
      open: false,
      nextOpenAt: '2026-06-21T12:00:00.000Z',
    });
  });

  it('waits until the window is open in every zone of the number', () => {
    // Open together 15:00–01:00 UTC.
    expect(decide(DAYTIME, [NY, LA], '2026-06-17T12:00:00Z')).toEqual({
      open: false,
      nextOpenAt: '2026-06-17T15:00:00.000Z',
    });
    expect(decide(DAYTIME, [NY, LA], '2026-06-17T15:00:00Z')).toEqual({ open: true });
    expect(decide(DAYTIME, [NY, LA], '2026-06-18T01:00:00Z')).toEqual({
      open: false,
      nextOpenAt: '2026-06-18T15:00:00.000Z',
    });
    // New York and London (UTC+1 in summer): 12:00–20:00 UTC.
    expect(decide(DAYTIME, [NY, 'Europe/London'], '2026-06-17T20:00:00Z')).toEqual({
      open: false,
      nextOpenAt: '2026-06-18T12:00:00.000Z',
    });
    expect(decide(DAYTIME, [NY, 'Europe/London'], '2026-06-17T19:59:00Z')).toEqual({ open: true });
  });

  it('finds the narrow overlap of zones twenty hours apart', () => {
    // What the library gives a NANP number it cannot place (a toll-free one, say).
    const nanp = [
      'America/Adak',
      'America/Anchorage',
      'America/Halifax',
      NY,
      LA,
      'America/St_Johns',
      'Pacific/Guam',
      'Pacific/Honolulu',
      'Pacific/Pago_Pago',
    ];
    // Guam opens at 22:00 UTC, St John's (UTC−2:30) closes at 23:30 UTC.
    expect(decide(DAYTIME, nanp, '2026-06-17T12:00:00Z')).toEqual({
      open: false,
      nextOpenAt: '2026-06-17T22:00:00.000Z',
    });
    expect(decide(DAYTIME, nanp, '2026-06-17T23:29:00Z')).toEqual({ open: true });
    expect(decide(DAYTIME, nanp, '2026-06-17T23:30:00Z')).toEqual({
      open: false,
      nextOpenAt: '2026-06-18T22:00:00.000Z',
    });
  });

  it('says never when the zones’ windows do not meet within 8 days', () => {
    const started = performance.now();
    expect(decide({ start: '09:00', end: '10:00' }, ['Pacific/Guam', NY], '2026-06-17T12:00:00Z')).toEqual({
      open: false,
    });
    expect(performance.now() - started).toBeLessThan(500);
  });

  it('is always open for "always", and checks UTC for a number without zones', () => {
    expect(decide('always', [NY], '2026-06-17T03:00:00Z')).toEqual({ open: true });
    expect(decide(DAYTIME, [], '2026-06-17T07:00:00Z')).toEqual({
      open: false,
      nextOpenAt: '2026-06-17T08:00:00.000Z',
    });
    expect(() => windowDecision(DAYTIME, ['Nowhere/Atlantis'], at('2026-06-17T12:00:00Z'))).toThrow(
      /unknown time zone Nowhere\/Atlantis/,
    );
  });

  it('accepts a window to the end of the day', () => {
    const evening: CallingWindow = { start: '22:00', end: '24:00' };
    expect(decide(evening, [NY], '2026-06-18T03:59:00Z')).toEqual({ open: true });
    expect(decide(evening, [NY], '2026-06-18T04:00:00Z')).toEqual({
      open: false,
      nextOpenAt: '2026-06-19T02:00:00.000Z',
    });
  });

  // New York springs forward on Sunday 2026-03-08: 02:00 EST (07:00 UTC) becomes 03:00 EDT.
  it('opens at the jump when the window starts in the skipped hour', () => {
    const night = (start: string, end: string): CallingWindow => ({ start, end });
    expect(decide(night('02:30', '05:00'), [NY], '2026-03-08T05:00:00Z')).toEqual({
      open: false,
      nextOpenAt: '2026-03-08T07:00:00.000Z',
    });
    expect(decide(night('02:30', '05:00'), [NY], '2026-03-08T07:10:00Z')).toEqual({ open: true });
    expect(decide(night('03:30', '05:00'), [NY], '2026-03-08T05:00:00Z')).toEqual({
      open: false,
      nextOpenAt: '2026-03-08T07:30:00.000Z',
    });
    // 01:30–02:15 loses its last quarter to the jump, and opens next at 01:30 EDT.
    expect(decide(night('01:30', '02:15'), [NY], '2026-03-08T06:59:00Z')).toEqual({ open: true });
    expect(decide(night('01:30', '02:15'), [NY], '2026-03-08T07:00:00Z')).toEqual({
      open: false,
      nextOpenAt: '2026-03-09T05:30:00.000Z',
    });
    expect(decide(DAYTIME, [NY], '2026-03-08T05:00:00Z')).toEqual({
      open: false,
      nextOpenAt: '2026-03-08T12:00:00.000Z',
    });
  });

  // New York falls back on Sunday 2026-11-01: 02:00 EDT (06:00 UTC) becomes 01:00 EST.
  it('follows the repeated hour when clocks fall back', () => {
    expect(decide(DAYTIME, [NY], '2026-11-01T04:00:00Z')).toEqual({
      open: false,
      nextOpenAt: '2026-11-01T13:00:00.000Z',
    });
    const repeated: CallingWindow = { start: '01:30', end: '01:45' };
    expect(decide(repeated, [NY], '2026-11-01T05:35:00Z')).toEqual({ open: true });
    // After 01:45 EDT, the same wall-clock window comes round again an hour later, in EST.
    expect(decide(repeated, [NY], '2026-11-01T05:50:00Z')).toEqual({
      open: false,
      nextOpenAt: '2026-11-01T06:30:00.000Z',
    });
    expect(decide(repeated, [NY], '2026-11-01T06:45:00Z')).toEqual({
      open: false,
      nextOpenAt: '2026-11-02T06:30:00.000Z',
    });
  });
});

describe('parseWindowSetting', () => {
  it('reads HH:MM-HH:MM and always', () => {
    expect(parseWindowSetting('08:00-21:00')).toEqual({ start: '08:00', end: '21:00' });
    expect(parseWindowSetting(' 09:30 - 17:00 ')).toEqual({ start: '09:30', end: '17:00' });
    expect(parseWindowSetting('00:00-24:00')).toEqual({ start: '00:00', end: '24:00' });
    expect(parseWindowSetting('always')).toBe('always');
  });

  it('refuses anything else in one line that says what is expected', () => {
    expect(() => parseWindowSetting('8-21')).toThrow(
      "calling window must be 'HH:MM-HH:MM' in the called party's local time (e.g. 08:00-21:00) or 'always', not \"8-21\"",
    );
    expect(() => parseWindowSetting('22:00-06:00')).toThrow(
      /calling window "22:00-06:00": end must be after start \(a window cannot run overnight/,
    );
    expect(() => parseWindowSetting('25:00-26:00')).toThrow(
      /start must be a local time HH:MM from 00:00 to 23:59; end must be/,
    );
    // A newline in the input is shown escaped, so the message stays one line.
    for (const text of [
      '',
      'Always',
      'sometimes',
      '8:00-21:00',
      '08:00-21:00-22:00',
      '08:00-24:01',
      '08:00-08:00',
      '08:00-21:00\nx',
    ]) {
      let message = '';
      try {
        parseWindowSetting(text);
      } catch (err) {
        message = (err as Error).message;
      }
      expect(message).toMatch(/^calling window [^\n]+$/);
    }
  });
});

describe('windowProblems', () => {
  it('is empty for a good window', () => {
    expect(windowProblems(DAYTIME)).toEqual([]);
    expect(windowProblems({ start: '00:00', end: '24:00', days: [...WEEKDAYS] })).toEqual([]);
  });

  it('names each problem by its path', () => {
    expect(windowProblems({ start: '7:00', end: '24:01' })).toEqual([
      { path: 'start', message: 'must be a local time HH:MM from 00:00 to 23:59' },
      { path: 'end', message: 'must be a local time HH:MM from 00:01 to 24:00' },
    ]);
    expect(windowProblems({ start: '24:00', end: '24:00' }).map((p) => p.path)).toEqual(['start']);
    expect(windowProblems({ start: '21:00', end: '08:00' })).toEqual([
      { path: 'end', message: expect.stringMatching(/after start.*overnight/) },
    ]);
    expect(windowProblems({ start: '08:00', end: '08:00' }).map((p) => p.path)).toEqual(['end']);
    expect(windowProblems({ ...DAYTIME, days: [] })).toEqual([
      { path: 'days', message: expect.stringMatching(/at least one day/) },
    ]);
    expect(windowProblems({ ...DAYTIME, days: ['mon', 'tue', 'mon', 'funday' as never] })).toEqual([
      { path: 'days.2', message: 'repeats mon' },
      { path: 'days.3', message: 'must be one of mon, tue, wed, thu, fri, sat, sun' },
    ]);
  });
});
