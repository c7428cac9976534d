import type { QueuedDial } from '../domain/dial';
import { HeldDials } from './held-dials';

const scope = (tenantId: string) => ({ tenantId }) as never;
const dial = (tenantId: string, dialId: string, contactId = dialId): QueuedDial => ({
  tenantId,
  dialId,
  contactId,
  campaignId: 'k',
  phone: '+14155550100',
  maxCallSeconds: 60,
  queuedAt: new Date(0),
  notBefore: new Date(0),
});

describe('HeldDials', () => {
  it('serves a tenant its due dials in the order they came, postponed ones once due', () => {
    const held = new HeldDials();
    for (const id of ['a', 'b', 'c']) held.add(dial('t', id), () => undefined);
    held.add(dial('u', 'x'), () => undefined);
    held.postpone(scope('t'), 'a', new Date(5_000));
    expect(held.due(scope('t'), new Date(1_000), 10).map((d) => d.dialId)).toEqual(['b', 'c']);
    expect(held.due(scope('t'), new Date(1_000), 1).map((d) => d.dialId)).toEqual(['b']);
    expect(held.due(scope('t'), new Date(5_000), 10).map((d) => d.dialId)).toEqual(['a', 'b', 'c']);
    expect(held.tenantsWaiting()).toEqual(['t', 'u']);
  });

  it('releases a dial once it is removed, a contact’s dials once it is forgotten, and forgets a tenant left with none', () => {
    const released: string[] = [];
    const held = new HeldDials();
    held.add(dial('t', 'c1:1', 'c1'), () => void released.push('c1:1'));
    held.add(dial('t', 'c2:1', 'c2'), () => void released.push('c2:1'));
    held.add(dial('t', 'c2:2', 'c2'), () => void released.push('c2:2'));
    expect(held.removeContact(scope('t'), 'c2')).toBe(2);
    expect(released).toEqual(['c2:1', 'c2:2']);
    held.remove(scope('t'), 'c1:1');
    held.remove(scope('t'), 'c1:1');
    expect(released).toEqual(['c2:1', 'c2:2', 'c1:1']);
    expect(held.size).toBe(0);
    expect(held.tenantsWaiting()).toEqual([]);
  });

  it('lets go of the dials of revoked partitions without releasing them (their next owner reads them again)', () => {
    const released: string[] = [];
    const held = new HeldDials();
    held.add(dial('t', 'p0'), () => void released.push('p0'), { topic: 'leads.dial.v1', partition: 0 });
    held.add(dial('t', 'p1'), () => void released.push('p1'), { topic: 'leads.dial.v1', partition: 1 });
    held.add(dial('t', 'store'), () => void released.push('store'));
    expect(held.revoke('leads.dial.v1', [1])).toBe(1);
    expect(released).toEqual([]);
    expect(held.has(scope('t'), 'p1')).toBe(false);
    expect(held.due(scope('t'), new Date(0), 10).map((d) => d.dialId)).toEqual(['p0', 'store']);
  });
});
