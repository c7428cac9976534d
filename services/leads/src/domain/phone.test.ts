import { readFileSync } from 'fs';
import { dirname, join } from 'path';
import { mongo } from 'mongoose';
import { IANAZone } from 'luxon';
import { parsePhoneNumberFromString } from 'libphonenumber-js/max';
import { timezones } from 'libphonenumber-geo-carrier';
import { parsePhone, TIME_ZONE_PREFIX_DIGITS, usableZone, type ParsedPhone } from './phone';

async function parsed(raw: string): Promise<ParsedPhone> {
  const result = await parsePhone(raw);
  if (!result.ok) throw new Error(`${raw} ${result.message}`);
  return result.phone;
}

async function refusal(raw: string): Promise<string> {
  const result = await parsePhone(raw);
  if (result.ok) throw new Error(`${raw} was accepted`);
  return result.message;
}

describe('parsePhone', () => {
  it('accepts the numbers the tests and the carrier simulator use, with their zones', async () => {
    for (const n of ['+14155550000', '+14155550001', '+14155550005']) {
      expect(await parsed(n)).toEqual({
        e164: n,
        countryIso: 'US',
        timeZones: ['America/Los_Angeles'],
        timeZoneSource: 'number',
      });
    }
    expect(await parsed('+12125550100')).toMatchObject({ countryIso: 'US', timeZones: ['America/New_York'] });
    expect(await parsed('+442079460000')).toMatchObject({ countryIso: 'GB', timeZones: ['Europe/London'] });
  });

  it('normalises the usual separators to E.164', async () => {
    for (const n of ['+1 (415) 555-0000', '+1.415.555.0000', ' +1 415 555 0000 '])
      expect((await parsed(n)).e164).toBe('+14155550000');
    expect((await parsed('+44 (0) 20 7946 0000')).e164).toBe('+442079460000');
  });

  it('refuses what is not international format', async () => {
    for (const n of ['4155550000', '', '   ', '0044 20 7946 0000'])
      expect(await refusal(n)).toBe('must be in international format with a leading +, e.g. +14155550123');
    // Letters would otherwise be read as a vanity number or text around a number.
    for (const n of ['+1415555000a', '+1-800-FLOWERS', '+1 415 555 0000 ext 2', '++14155550000', '+1\t4155550000']) {
      expect(await refusal(n)).toMatch(/only digits, spaces, dashes, dots and parentheses/);
    }
  });

  it('refuses numbers outside every numbering plan', async () => {
    // 555 is not an area code; the others are too short or too long for their plans.
    for (const n of ['+15551234567', '+1415555000', '+141555500000', '+', '+999 1234']) {
      expect(await refusal(n)).toBe('is not a valid phone number in any numbering plan');
    }
  });

  it('refuses a long input before parsing it', async () => {
    expect(await refusal('+1 415 555 0000' + ' '.repeat(18))).toBe('must be at most 32 characters');
    const started = performance.now();
    expect(await refusal('+1'.repeat(5_000_000))).toBe('must be at most 32 characters');
    expect(performance.now() - started).toBeLessThan(50);
  });

  it('gives every zone of a number that spans several, and UTC when the number has none', async () => {
    // Most of Idaho's 208 is Mountain time, but ranges in its north are Pacific.
    expect((await parsed('+12085550123')).timeZones).toEqual(['America/Boise', 'America/Los_Angeles']);
    expect((await parsed('+12082301234')).timeZones).toEqual(['America/Denver']);
    // International freephone has no country and no zone.
    expect(await parsed('+80012345678')).toEqual({
      e164: '+80012345678',
      timeZones: ['UTC'],
      timeZoneSource: 'fallback',
    });
  });

  it('gives luxon zone names, old ones included', async () => {
    const india = await parsed('+919876543210');
    expect(india.timeZones).toHaveLength(1);
    expect(IANAZone.isValidZone(india.timeZones[0]!)).toBe(true);
    expect(usableZone('Asia/Calcutta')).toBeDefined();
    expect(usableZone('Nowhere/Atlantis')).toBeUndefined();
  });

  it("answers exactly as the library's own lookup, for numbers of many plans", async () => {
    let seed = 7;
    const rand = (n: number) => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return (seed >>> 8) % n;
    };
    const numbers = new Set<string>([
      '+12085550123',
      '+12082301234',
      '+80012345678',
      '+919876543210',
      '+61291234567',
      '+4930123456',
    ]);
    while (numbers.size < 300) {
      const n = `+1${200 + rand(800)}${200 + rand(800)}${String(rand(10_000)).padStart(4, '0')}`;
      if (parsePhoneNumberFromString(n)?.isValid()) numbers.add(n);
    }
    for (const n of numbers) {
      const ours = await parsePhone(n);
      if (!ours.ok) throw new Error(`${n}: ${ours.message}`);
      const theirs = ((await timezones(parsePhoneNumberFromString(n))) ?? []).map((z) => usableZone(z));
      expect({ n, zones: ours.phone.timeZoneSource === 'fallback' ? [] : ours.phone.timeZones }).toEqual({
        n,
        zones: [...new Set(theirs)],
      });
    }
  });

  it('hands out copies of the zones', async () => {
    const first = await parsed('+12083001234');
    first.timeZones.push('Europe/Paris');
    expect((await parsed('+12083001299')).timeZones).toEqual(['America/Boise', 'America/Los_Angeles']);
  });

  // The lookup and the zone names rest on what the library's table holds; a new version of the
  // table must not break either silently.
  it('the library table has no prefix longer than the lookup tries, and only zones luxon knows', () => {
    const file = join(dirname(require.resolve('libphonenumber-geo-carrier')), '../resources/timezones.bson');
    const table = mongo.BSON.deserialize(readFileSync(file)) as Record<string, string>;
    const prefixes = Object.keys(table);
    expect(prefixes.length).toBeGreaterThan(1000);
    expect(Math.max(...prefixes.map((p) => p.length))).toBeLessThanOrEqual(TIME_ZONE_PREFIX_DIGITS);
    const zones = new Set(Object.values(table).flatMap((v) => v.split('&')));
    expect([...zones].filter((z) => usableZone(z) === undefined)).toEqual([]);
  });
});
