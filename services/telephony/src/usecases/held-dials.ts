import type { TenantScope } from '@voiceapi/kit/grpc';
import type { QueuedDial } from '../domain/dial';

/** What a held dial is released by: the offsets of its requests (and the queue document of an older release). */
type Release = () => void;

interface Held {
  dial: QueuedDial;
  releases: Release[];
  /** Where its request came from (its offset is what keeps it), so a partition's next owner takes it over. */
  source?: { topic: string; partition: number };
  heldAt: number;
}

/**
 * Dial requests this replica consumed and has not placed or dropped, in memory only (decision 0147): offsets stay
 * uncommitted until release, so a dead replica's dials are read again by the next owner. Per tenant, in arrival order.
 */
export class HeldDials {
  private readonly byTenant = new Map<string, Map<string, Held>>();
  private count = 0;

  /** `queuedDone`: a dial held from the dial queue was placed or dropped (room for the next). */
  constructor(private readonly queuedDone: () => void = () => undefined) {}

  get size(): number {
    return this.count;
  }

  /** Holds a dial until placed, dropped or forgotten (`release` then); false when held already (a redelivery). */
  add(d: QueuedDial, release: Release, source?: Held['source'], nowMs = Date.now()): boolean {
    let dials = this.byTenant.get(d.tenantId);
    if (!dials) {
      dials = new Map();
      this.byTenant.set(d.tenantId, dials);
    }
    const held = dials.get(d.dialId);
    if (held) {
      held.releases.push(release);
      return false;
    }
    dials.set(d.dialId, { dial: d, releases: [release], ...(source && { source }), heldAt: nowMs });
    this.count++;
    return true;
  }

  /** The tenants with dials held (due or not). */
  tenantsWaiting(): string[] {
    return [...this.byTenant.keys()];
  }

  /** A tenant's dials due by `now`, oldest first, at most `limit`. */
  due(scope: TenantScope, now: Date, limit: number): QueuedDial[] {
    const out: QueuedDial[] = [];
    for (const { dial } of this.byTenant.get(scope.tenantId)?.values() ?? []) {
      if (out.length >= limit) break;
      if (dial.notBefore.getTime() <= now.getTime()) out.push(dial);
    }
    return out;
  }

  has(scope: TenantScope, dialId: string): boolean {
    return this.byTenant.get(scope.tenantId)?.has(dialId) ?? false;
  }

  postpone(scope: TenantScope, dialId: string, until: Date): void {
    const held = this.byTenant.get(scope.tenantId)?.get(dialId);
    if (held) held.dial = { ...held.dial, notBefore: until };
  }

  /** The dial is done with (placed or dropped): its requests are released. */
  remove(scope: TenantScope, dialId: string): void {
    const dials = this.byTenant.get(scope.tenantId);
    const held = dials?.get(dialId);
    if (!dials || !held) return;
    this.forget(scope.tenantId, dials, dialId);
    if (!held.source) this.queuedDone();
    // A release never stops the others (nor the caller's work).
    for (const release of held.releases)
      try {
        release();
      } catch {
        // The offset stays uncommitted: its request is read again, and refused once placed.
      }
  }

  /** Up to `limit` dials held by their offset since before `beforeMs`; each tenant's walk stops at a younger one. */
  heldSince(beforeMs: number, limit: number): QueuedDial[] {
    const out: QueuedDial[] = [];
    for (const dials of this.byTenant.values())
      for (const h of dials.values()) {
        if (out.length >= limit) return out;
        if (h.heldAt >= beforeMs) break;
        if (h.source) out.push(h.dial);
      }
    return out;
  }

  /** How many of a tenant's dials are held from the dial queue. */
  fromQueue(tenantId: string): number {
    let n = 0;
    for (const h of this.byTenant.get(tenantId)?.values() ?? []) if (!h.source) n++;
    return n;
  }

  /** Whether the dial is held by its request's offset (false: by the dial queue, or not held). */
  byOffset(scope: TenantScope, dialId: string): boolean {
    return this.byTenant.get(scope.tenantId)?.get(dialId)?.source !== undefined;
  }

  /** Drops a contact's dials (cancelled or erased); the number dropped. */
  removeContact(scope: TenantScope, contactId: string): number {
    const ids = [...(this.byTenant.get(scope.tenantId)?.values() ?? [])]
      .filter((h) => h.dial.contactId === contactId)
      .map((h) => h.dial.dialId);
    for (const id of ids) this.remove(scope, id);
    return ids.length;
  }

  /** Lets go, unreleased, of dials from partitions no longer owned: their next owner reads the offsets again. */
  revoke(topic: string, partitions: readonly number[]): number {
    let dropped = 0;
    for (const [tenantId, dials] of this.byTenant)
      for (const [dialId, held] of dials)
        if (held.source?.topic === topic && partitions.includes(held.source.partition)) {
          this.forget(tenantId, dials, dialId);
          dropped++;
        }
    return dropped;
  }

  private forget(tenantId: string, dials: Map<string, Held>, dialId: string): void {
    dials.delete(dialId);
    this.count--;
    if (dials.size === 0) this.byTenant.delete(tenantId);
  }
}
