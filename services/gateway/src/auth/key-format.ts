import { createHmac, randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';
import type { KeyMode } from '@voiceapi/kit/grpc';

/**
 * API key format: `sk_<mode>_<secret><checksum>`.
 * - secret: 43 base62 characters from a CSPRNG (≈256 bits);
 * - checksum: 6 base62 characters of CRC32(prefix + secret), so a malformed or truncated key is
 *   refused without a database lookup and secret scanners can recognise real keys.
 */
const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const SECRET_LENGTH = 43;
const CHECKSUM_LENGTH = 6;
const KEY_PATTERN = /^sk_(live|sandbox)_([0-9A-Za-z]{43})([0-9A-Za-z]{6})$/;

function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      // Rejection sampling keeps every character equally likely (248 = 4 × 62).
      if (byte < 248 && out.length < length) out += ALPHABET[byte % 62];
    }
  }
  return out;
}

function base62Fixed(n: number, width: number): string {
  let out = '';
  for (let i = 0; i < width; i++) {
    out = ALPHABET[n % 62] + out;
    n = Math.floor(n / 62);
  }
  return out;
}

const checksum = (body: string): string => base62Fixed(crc32(body) >>> 0, CHECKSUM_LENGTH);

export function generateKey(mode: KeyMode): string {
  const body = `sk_${mode}_${randomBase62(SECRET_LENGTH)}`;
  return body + checksum(body);
}

/** The key's mode when it is well formed and its checksum matches; otherwise undefined. */
export function parseKey(key: string): { mode: KeyMode } | undefined {
  const m = KEY_PATTERN.exec(key);
  if (!m) return undefined;
  const body = key.slice(0, key.length - CHECKSUM_LENGTH);
  if (checksum(body) !== m[3]) return undefined;
  return { mode: m[1] as KeyMode };
}

/** HMAC-SHA256 with a server-side pepper: keys are high-entropy, so a slow hash buys nothing. */
export const hashKey = (key: string, pepper: string): string => createHmac('sha256', pepper).update(key).digest('hex');

/** What may be shown about a key after creation: its mode prefix and last four characters. */
export const keyHint = (key: string): string => `${key.slice(0, key.indexOf('_', 3) + 1)}…${key.slice(-4)}`;
