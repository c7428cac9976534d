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
    // The form without a key id (`v1.<iv>.<tag>.<ciphertext>`), which no release wrote, is refused like garbage.
    const [, , ...unnamed] = sealed.split('.');
    expect(() => box.open(['v1', ...unnamed].join('.'), 'tenant-a:agent-1')).toThrow(/not a sealed secret/);
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

  it('refuses a short master secret', () => {
    expect(() => new SecretBox('short', 'p')).toThrow(/at least 32/);
  });
});
