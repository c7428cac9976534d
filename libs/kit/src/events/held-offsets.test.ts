import { HeldOffsets } from './held-offsets';

const at = (h: HeldOffsets) => Object.fromEntries(h.committable().map((o) => [`${o.topic}:${o.partition}`, o.offset]));

describe('HeldOffsets', () => {
  it('commits a partition up to its oldest event still open: handled and not held, or held and released', () => {
    const h = new HeldOffsets();
    const close = ['10', '11', '12'].map((o) => h.open('t', 0, o));
    expect(at(h)).toEqual({ 't:0': '10' });
    const release = h.hold('t', 0, '11');
    close.forEach((c) => c());
    // 10 handled; 11 handled but held; 12 handled.
    expect(at(h)).toEqual({ 't:0': '11' });
    expect(h.heldCount).toBe(1);
    release();
    release();
    expect(at(h)).toEqual({ 't:0': '13' });
    expect(h.heldCount).toBe(0);
  });

  it('keeps an event whose handler failed open until a redelivery of it is handled', () => {
    const h = new HeldOffsets();
    h.open('t', 0, '0')();
    h.open('t', 0, '1'); // its handler failed: never closed
    h.open('t', 0, '2')();
    expect(at(h)).toEqual({ 't:0': '1' });
    h.open('t', 0, '1')();
    expect(at(h)).toEqual({ 't:0': '3' });
  });

  it('holds nothing for a partition no longer kept (a late hold after a revocation)', () => {
    const h = new HeldOffsets();
    h.open('t', 0, '4')();
    h.keepOnly(new Map());
    h.hold('t', 0, '4')();
    expect(h.heldCount).toBe(0);
    expect(at(h)).toEqual({});
  });

  it('keeps a redelivered event open until the holds of both deliveries are released', () => {
    const h = new HeldOffsets();
    h.open('t', 0, '5')();
    const first = h.hold('t', 0, '5');
    h.open('t', 0, '5')();
    const again = h.hold('t', 0, '5');
    first();
    expect(at(h)).toEqual({ 't:0': '5' });
    again();
    expect(at(h)).toEqual({ 't:0': '6' });
  });

  it('forgets revoked partitions: their holds no longer count, and a late release changes nothing', () => {
    const h = new HeldOffsets();
    h.open('t', 0, '1')();
    h.open('t', 1, '7')();
    const kept = h.hold('t', 0, '1');
    const lost = h.hold('t', 1, '7');
    expect(h.keepOnly(new Map([['t', [0]]]))).toEqual([{ topic: 't', partitions: [1] }]);
    expect(h.heldCount).toBe(1);
    lost();
    expect(h.heldCount).toBe(1);
    expect(at(h)).toEqual({ 't:0': '1' });
    kept();
    expect(at(h)).toEqual({ 't:0': '2' });
  });
});
