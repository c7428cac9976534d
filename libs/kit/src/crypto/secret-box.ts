import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto';

const IV_BYTES = 12;
const TAG_BYTES = 16;

interface Key {
  /** A fingerprint that reveals nothing of the key. */
  id: string;
  bytes: Buffer;
}

/**
 * Seals a tenant's stored secrets with AES-256-GCM (HKDF key per purpose). The owning record is the
 * associated data, so a value copied onto another record does not open. A key ring: the first master
 * secret seals, all open, for rotation (docs/operations.md). Form: `v2.<key id>.<iv>.<tag>.<ciphertext>`.
 */
export class SecretBox {
  private readonly keys: Key[];

  /** `masterSecrets`: the current one first (it seals), then earlier ones that still open. */
  constructor(masterSecrets: string | readonly string[], purpose: string) {
    const secrets = typeof masterSecrets === 'string' ? [masterSecrets] : [...masterSecrets];
    if (secrets.length === 0) throw new Error('a secret box needs a master secret');
    this.keys = secrets.map((secret) => {
      if (secret.length < 32) throw new Error('the master secret must be at least 32 characters');
      const bytes = Buffer.from(hkdfSync('sha256', secret, Buffer.alloc(0), `voiceapi:${purpose}`, 32));
      return { id: createHmac('sha256', bytes).update('key id').digest().subarray(0, 6).toString('base64url'), bytes };
    });
  }

  seal(plaintext: string, boundTo: string): string {
    const key = this.keys[0]!;
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', key.bytes, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(Buffer.from(boundTo));
    const data = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return ['v2', key.id, ...[iv, cipher.getAuthTag(), data].map((p) => p.toString('base64url'))].join('.');
  }

  /** The plaintext; throws when the value was altered, belongs to another record, or no key of the ring sealed it. */
  open(sealed: string, boundTo: string): string {
    const parts = sealed.split('.');
    if (parts[0] === 'v2' && parts.length === 5) {
      const key = this.keys.find((k) => k.id === parts[1]);
      if (!key) throw new Error('sealed with a key that is not in the ring');
      return decrypt(key, parts[2]!, parts[3]!, parts[4]!, boundTo);
    }
    throw new Error('not a sealed secret');
  }

  /** Sealed by the current key (nothing to do when the ring rotates). */
  isCurrent(sealed: string): boolean {
    return sealed.startsWith(`v2.${this.keys[0]!.id}.`);
  }

  reseal(sealed: string, boundTo: string): string {
    return this.seal(this.open(sealed, boundTo), boundTo);
  }

  /** More than one key: stored values may still need moving onto the current one. */
  get rotating(): boolean {
    return this.keys.length > 1;
  }
}

function decrypt(key: Key, iv: string, tag: string, data: string, boundTo: string): string {
  const decipher = createDecipheriv('aes-256-gcm', key.bytes, Buffer.from(iv, 'base64url'), {
    authTagLength: TAG_BYTES,
  });
  decipher.setAAD(Buffer.from(boundTo));
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  return Buffer.concat([decipher.update(Buffer.from(data, 'base64url')), decipher.final()]).toString('utf8');
}
