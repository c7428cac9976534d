import { RecordingTokens } from './recording-token';

describe('recording tokens', () => {
  const tokens = new RecordingTokens('s'.repeat(32));
  const now = new Date('2026-11-22T12:00:00Z');
  const grant = { tenantId: 'tenant-a', callId: 'call-1', expiresAt: new Date('2026-11-22T12:10:00Z') };

  it('verifies what it signed until the expiry, then says expired', () => {
    const token = tokens.sign(grant);
    expect(tokens.verify(token, now)).toEqual({ ok: true, grant });
    expect(tokens.verify(token, new Date('2026-11-22T12:10:00Z'))).toEqual({ ok: false, why: 'expired' });
  });

  it('refuses a token signed with another secret, altered, truncated or malformed', () => {
    const token = tokens.sign(grant);
    const [payload, mac] = token.split('.') as [string, string];
    const forged = new RecordingTokens('x'.repeat(32)).sign(grant);
    const otherCall = tokens.sign({ ...grant, callId: 'call-2' }).split('.')[0]!;
    const flipped = mac.slice(0, -1) + (mac.endsWith('A') ? 'B' : 'A');
    for (const bad of [
      forged,
      `${otherCall}.${mac}`,
      `${payload}.${flipped}`,
      token.slice(0, -3),
      payload,
      `${token}.x`,
      '',
      '.',
      'a.b',
    ]) {
      expect(tokens.verify(bad, now)).toEqual({ ok: false, why: 'invalid' });
    }
  });

  it('refuses a validly signed payload that is not a grant', () => {
    const sneaky = new RecordingTokens('s'.repeat(32));
    const payload = Buffer.from(JSON.stringify({ t: 1 })).toString('base64url');
    const mac = (sneaky as unknown as { mac(p: string): string }).mac(payload);
    expect(tokens.verify(`${payload}.${mac}`, now)).toEqual({ ok: false, why: 'invalid' });
  });
});
