import { createHmac, timingSafeEqual } from 'node:crypto';

export interface RecordingGrant {
  tenantId: string;
  callId: string;
  expiresAt: Date;
}

export type TokenCheck = { ok: true; grant: RecordingGrant } | { ok: false; why: 'invalid' | 'expired' };

const b64 = (b: Buffer | string): string => Buffer.from(b).toString('base64url');

/** Short-lived tokens `<payload>.<HMAC-SHA256>`: base64url JSON of tenant, call and expiry; the secret stays here. */
export class RecordingTokens {
  constructor(private readonly secret: string) {}

  sign(grant: RecordingGrant): string {
    const payload = b64(
      JSON.stringify({ t: grant.tenantId, c: grant.callId, e: Math.floor(grant.expiresAt.getTime() / 1000) }),
    );
    return `${payload}.${this.mac(payload)}`;
  }

  verify(token: string, now: Date): TokenCheck {
    const parts = token.split('.');
    if (parts.length !== 2 || !parts[0] || !parts[1]) return { ok: false, why: 'invalid' };
    const [payload, mac] = parts as [string, string];
    const expected = Buffer.from(this.mac(payload), 'base64url');
    const given = Buffer.from(mac, 'base64url');
    // Compared in constant time; a re-encoded signature (other padding or characters) fails too.
    if (given.length !== expected.length || !timingSafeEqual(given, expected) || b64(given) !== mac)
      return { ok: false, why: 'invalid' };
    let body: unknown;
    try {
      body = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    } catch {
      return { ok: false, why: 'invalid' };
    }
    const { t, c, e } = (body ?? {}) as { t?: unknown; c?: unknown; e?: unknown };
    if (typeof t !== 'string' || typeof c !== 'string' || typeof e !== 'number') return { ok: false, why: 'invalid' };
    if (now.getTime() >= e * 1000) return { ok: false, why: 'expired' };
    return { ok: true, grant: { tenantId: t, callId: c, expiresAt: new Date(e * 1000) } };
  }

  private mac(payload: string): string {
    return createHmac('sha256', this.secret).update(`recording:${payload}`).digest('base64url');
  }
}
