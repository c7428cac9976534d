import { DateTime, IANAZone } from 'luxon';

/**
 * Calling windows (decision 0060): local wall-clock times that must be open in every zone the number may be in,
 * since US law forbids telemarketing outside 8 a.m.–9 p.m. at the called party's location.
 */

export type Weekday = 'mon' | 'tue' | 'wed' | 'thu' | 'fri' | 'sat' | 'sun';
/** Local times 'HH:MM', the window being [start, end) on the listed days (every day when omitted). */
export interface CallingWindow {
  start: string;
  end: string;
  days?: Weekday[];
}
export type WindowSetting = CallingWindow | 'always';

/** In luxon's order: index + 1 is luxon's weekday number. */
export const WEEKDAYS: readonly Weekday[] = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'];

const TIME = /^(?:[01]\d|2[0-3]):[0-5]\d$/;
const SETTING = /^(\d\d:\d\d)\s*-\s*(\d\d:\d\d)$/;

/** For CALLING_WINDOW_DEFAULT: 'HH:MM-HH:MM' or 'always'; throws Error with one clear line otherwise. */
export function parseWindowSetting(text: string): WindowSetting {
  const trimmed = text.trim();
  if (trimmed === 'always') return 'always';
  const shown = JSON.stringify(trimmed.slice(0, 40));
  const match = SETTING.exec(trimmed);
  if (!match)
    throw new Error(
      `calling window must be 'HH:MM-HH:MM' in the called party's local time (e.g. 08:00-21:00) or 'always', not ${shown}`,
    );
  const window: CallingWindow = { start: match[1]!, end: match[2]! };
  const problems = windowProblems(window);
  if (problems.length)
    throw new Error(`calling window ${shown}: ${problems.map((p) => `${p.path} ${p.message}`).join('; ')}`);
  return window;
}

/** Empty when fine. */
export function windowProblems(w: CallingWindow): { path: string; message: string }[] {
  const problems: { path: string; message: string }[] = [];
  const startOk = typeof w.start === 'string' && TIME.test(w.start);
  const endOk = typeof w.end === 'string' && (TIME.test(w.end) || w.end === '24:00');
  if (!startOk) problems.push({ path: 'start', message: 'must be a local time HH:MM from 00:00 to 23:59' });
  if (!endOk) problems.push({ path: 'end', message: 'must be a local time HH:MM from 00:01 to 24:00' });
  if (startOk && endOk && minuteOfDay(w.end) <= minuteOfDay(w.start)) {
    problems.push({
      path: 'end',
      message: 'must be after start (a window cannot run overnight: use two campaigns or widen it)',
    });
  }
  if (w.days !== undefined) {
    if (!Array.isArray(w.days) || w.days.length === 0)
      problems.push({ path: 'days', message: 'must list at least one day when given (omit it for every day)' });
    else {
      const seen = new Set<string>();
      w.days.forEach((day, i) => {
        if (!WEEKDAYS.includes(day))
          problems.push({ path: `days.${i}`, message: `must be one of ${WEEKDAYS.join(', ')}` });
        else if (seen.has(day)) problems.push({ path: `days.${i}`, message: `repeats ${day}` });
        seen.add(day);
      });
    }
  }
  return problems;
}

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const HORIZON = 8 * DAY;
// Both loops end well before these: a round moves past at least one opening of one zone.
const MAX_ROUNDS = 500;
const MAX_STEPS = 100;
// Offsets are compared at both ends of a step; no zone changes its offset twice within this.
const MAX_STEP = 12 * HOUR;

interface ZoneWindow {
  zone: IANAZone;
  start: number;
  end: number;
  /** luxon weekday numbers, Monday = 1. */
  days: ReadonlySet<number>;
}

/** If closed, the earliest instant open in every zone (undefined beyond 8 days). No zones means UTC. */
export function windowDecision(w: WindowSetting, timeZones: string[], now: Date): { open: boolean; nextOpenAt?: Date } {
  if (w === 'always') return { open: true };
  const days = new Set((w.days ?? WEEKDAYS).map((d) => WEEKDAYS.indexOf(d) + 1));
  const zones = [...new Set(timeZones.length ? timeZones : ['UTC'])].map((name): ZoneWindow => {
    const zone = IANAZone.create(name);
    if (!zone.isValid) throw new Error(`unknown time zone ${name}`);
    return { zone, start: minuteOfDay(w.start), end: minuteOfDay(w.end), days };
  });
  const from = now.getTime();
  const horizon = from + HORIZON;
  let t = from;
  for (let round = 0; round < MAX_ROUNDS && t <= horizon; round++) {
    let latest = t;
    for (const z of zones) {
      const opening = nextOpening(z, t, horizon);
      if (opening === undefined) return { open: false };
      latest = Math.max(latest, opening);
    }
    if (latest === t) return t === from ? { open: true } : { open: false, nextOpenAt: new Date(t) };
    t = latest;
  }
  return { open: false };
}

function isOpen(z: ZoneWindow, local: DateTime): boolean {
  const minute = local.hour * 60 + local.minute;
  return z.days.has(local.weekday) && minute >= z.start && minute < z.end;
}

/**
 * Steps to the next local start without crossing an offset change; each change is located and checked,
 * since a spring-forward jump can land inside the window (02:00 → 03:00 with a window from 02:30).
 */
function nextOpening(z: ZoneWindow, from: number, horizon: number): number | undefined {
  let x = from;
  for (let step = 0; step < MAX_STEPS && x <= horizon; step++) {
    const local = DateTime.fromMillis(x, { zone: z.zone });
    if (isOpen(z, local)) return x;
    const jump = Math.min(untilNextStart(z, local), MAX_STEP);
    const offset = z.zone.offset(x);
    x = z.zone.offset(x + jump) === offset ? x + jump : offsetChange(z.zone, x, x + jump, offset);
  }
  return undefined;
}

/** Wall-clock time from `local` to the next start on an allowed day. */
function untilNextStart(z: ZoneWindow, local: DateTime): number {
  const sinceMidnight = local.hour * HOUR + local.minute * MINUTE + local.second * 1000 + local.millisecond;
  for (let ahead = 0; ahead <= 7; ahead++) {
    const weekday = ((local.weekday - 1 + ahead) % 7) + 1;
    const wait = ahead * DAY + z.start * MINUTE - sinceMidnight;
    if (z.days.has(weekday) && wait > 0) return wait;
  }
  return MAX_STEP; // no days at all: never opens, the horizon ends the search
}

/** The first millisecond in (lo, hi] whose offset differs from `offset` (the one at lo). */
function offsetChange(zone: IANAZone, lo: number, hi: number, offset: number): number {
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (zone.offset(mid) === offset) lo = mid;
    else hi = mid;
  }
  return hi;
}

function minuteOfDay(hhmm: string): number {
  return Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));
}
