import { generateKey, hashKey, keyHint, parseKey } from './key-format';

describe('API key format', () => {
  it('generates live and sandbox keys that parse back to their mode', () => {
    const live = generateKey('live');
    const sandbox = generateKey('sandbox');
    expect(live).toMatch(/^sk_live_[0-9A-Za-z]{49}$/);
    expect(sandbox).toMatch(/^sk_sandbox_[0-9A-Za-z]{49}$/);
    expect(parseKey(live)).toEqual({ mode: 'live' });
    expect(parseKey(sandbox)).toEqual({ mode: 'sandbox' });
  });

  it('never generates the same key twice', () => {
    const keys = new Set(Array.from({ length: 500 }, () => generateKey('live')));
    expect(keys.size).toBe(500);
  });

  it('refuses a key whose checksum does not match (one character changed)', () => {
    const key = generateKey('live');
    const i = 20;
    const swapped = key.slice(0, i) + (key[i] === 'a' ? 'b' : 'a') + key.slice(i + 1);
    expect(parseKey(swapped)).toBeUndefined();
  });

  it('refuses keys of the wrong shape', () => {
    for (const bad of [
      '',
      'sk_live_',
      'sk_test_' + 'a'.repeat(49),
      'pk_live_' + 'a'.repeat(49),
      generateKey('live') + 'x',
    ]) {
      expect(parseKey(bad)).toBeUndefined();
    }
  });

  it('hashes with the pepper, so the same key under another pepper does not match', () => {
    const key = generateKey('live');
    expect(hashKey(key, 'pepper-one-0123456')).toBe(hashKey(key, 'pepper-one-0123456'));
    expect(hashKey(key, 'pepper-one-0123456')).not.toBe(hashKey(key, 'pepper-two-0123456'));
  });

  it('shows only the mode prefix and last four characters in a hint', () => {
    const key = generateKey('sandbox');
    expect(keyHint(key)).toBe(`sk_sandbox_…${key.slice(-4)}`);
  });
});
