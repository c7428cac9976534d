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
    const data = Buffer.from(parts[3]!, 'base64url');
    data[0] = data[0]! ^ 1; // one bit flipped
    parts[3] = data.toString('base64url');
    expect(() => box.open(parts.join('.'), 'tenant-a:agent-1')).toThrow();
    expect(() => new SecretBox('n'.repeat(40), 'agents.custom-api-secret').open(sealed, 'tenant-a:agent-1')).toThrow();
    expect(() => new SecretBox(master, 'webhooks.signing-secret').open(sealed, 'tenant-a:agent-1')).toThrow();
    expect(() => box.open('garbage', 'tenant-a:agent-1')).toThrow(/not a sealed secret/);
  });

  it('refuses a short master secret', () => {
    expect(() => new SecretBox('short', 'p')).toThrow(/at least 32/);
  });
});
