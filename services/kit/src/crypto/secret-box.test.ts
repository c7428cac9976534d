import { createCipheriv, hkdfSync } from 'node:crypto';
import { SecretBox } from './secret-box';

describe('SecretBox', () => {
  const master = 'm'.repeat(40);
  const box = new SecretBox(master, 'agents.custom-api-secret');

  it('opens what it sealed for the same record, and the sealed form does not contain the plaintext', () => {
    const sealed = box.seal('s3cret-token', 'tenant-a:agent-1');
    expect(sealed).not.toContain('s3cret');
    expect(sealed).not.toBe(box.seal('s3cret-token', 'tenant-a:agent-1')); // a fresh IV each time
    expect(box.open(sealed, 'tenant-a:agent-1')).toBe('s3cret-token');
  });

  it('refuses a value moved to another record, altered, or opened with another key or purpose', () => {
    const sealed = box.seal('s3cret-token', 'tenant-a:agent-1');
    expect(() => box.open(sealed, 'tenant-b:agent-1')).toThrow();
    const parts = sealed.split('.');
    const data = Buffer.from(parts[4]!, 'base64url');
    data[0] = data[0]! ^ 1; // one bit flipped
    parts[4] = data.toString('base64url');
    expect(() => box.open(parts.join('.'), 'tenant-a:agent-1')).toThrow();
    expect(() => new SecretBox('n'.repeat(40), 'agents.custom-api-secret').open(sealed, 'tenant-a:agent-1')).toThrow();
    expect(() => new SecretBox(master, 'webhooks.signing-secret').open(sealed, 'tenant-a:agent-1')).toThrow();
    expect(() => box.open('garbage', 'tenant-a:agent-1')).toThrow(/not a sealed secret/);
  });

  it('rotates: a new key seals, the old one still opens, and reseal moves a value onto the new key', () => {
    const next = 'n'.repeat(40);
    const old = box.seal('s3cret-token', 'tenant-a:agent-1');
    const ring = new SecretBox([next, master], 'agents.custom-api-secret');
    expect(ring.rotating).toBe(true);
    expect(ring.open(old, 'tenant-a:agent-1')).toBe('s3cret-token');
    expect(ring.isCurrent(old)).toBe(false);
    const moved = ring.reseal(old, 'tenant-a:agent-1');
    expect(ring.isCurrent(moved)).toBe(true);
    // Once the old key leaves the ring, only what was moved opens.
    const after = new SecretBox(next, 'agents.custom-api-secret');
    expect(after.open(moved, 'tenant-a:agent-1')).toBe('s3cret-token');
    expect(() => after.open(old, 'tenant-a:agent-1')).toThrow(/not in the ring/);
    expect(() => ring.reseal(old, 'tenant-b:agent-1')).toThrow();
  });

  it('opens values sealed before the ring (v1, no key id) with whichever key sealed them', () => {
    // v1 = AES-256-GCM under the same derived key, without the key id.
    const key = Buffer.from(hkdfSync('sha256', master, Buffer.alloc(0), 'voiceapi:agents.custom-api-secret', 32));
    const iv = Buffer.alloc(12, 7);
    const cipher = createCipheriv('aes-256-gcm', key, iv, { authTagLength: 16 });
    cipher.setAAD(Buffer.from('tenant-a:agent-1'));
    const data = Buffer.concat([cipher.update('legacy', 'utf8'), cipher.final()]);
    const v1 = ['v1', iv, cipher.getAuthTag(), data].map((p) => (typeof p === 'string' ? p : p.toString('base64url'))).join('.');
    const ring = new SecretBox(['n'.repeat(40), master], 'agents.custom-api-secret');
    expect(ring.open(v1, 'tenant-a:agent-1')).toBe('legacy');
    expect(ring.isCurrent(v1)).toBe(false);
    expect(() => new SecretBox('n'.repeat(40), 'agents.custom-api-secret').open(v1, 'tenant-a:agent-1')).toThrow(/no key/);
  });

  it('refuses a short master secret', () => {
    expect(() => new SecretBox('short', 'p')).toThrow(/at least 32/);
  });
});
