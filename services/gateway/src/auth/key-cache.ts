import { LRUCache } from 'lru-cache';
import type { ApiKeyRecord } from '../store/api-keys';

/** What a request needs to know about its key. */
export interface AuthenticatedKey {
  keyId: string;
  tenantId: string;
  mode: ApiKeyRecord['mode'];
  scopes: ReadonlySet<string>;
  status: ApiKeyRecord['status'];
  rateLimitPerSecond?: number;
}

/** The part of a stored key that authentication and the rate limit need. */
export function authenticatedKey(k: ApiKeyRecord): AuthenticatedKey {
  return {
    keyId: k._id.toString(),
    tenantId: k.tenantId,
    mode: k.mode,
    scopes: new Set(k.scopes),
    status: k.status,
    ...(k.rateLimitPerSecond !== undefined && { rateLimitPerSecond: k.rateLimitPerSecond }),
  };
}

type Entry = { found: AuthenticatedKey } | { found: null };

/**
 * Key lookups by hash, cached so that authentication does not hit the database on every request.
 * Entries live `ttlMs` at most; a key change evicts at once (locally, and on every other replica
 * through the control topic). Unknown hashes are cached briefly too, so a flood of bad keys cannot
 * turn into a flood of queries.
 */
export class KeyCache {
  private readonly byHash: LRUCache<string, Entry>;
  private readonly hashById = new Map<string, string>();
  private readonly negativeTtlMs: number;
  /** Concurrent misses for one key share one database read. */
  private readonly inflight = new Map<string, Promise<AuthenticatedKey | null>>();
  /** Bumped on every eviction: a load that started before it must not repopulate the cache. */
  private generation = 0;

  constructor(
    private readonly load: (hash: string) => Promise<AuthenticatedKey | null>,
    opts: { ttlMs: number; negativeTtlMs?: number; max?: number },
  ) {
    this.byHash = new LRUCache<string, Entry>({
      max: opts.max ?? 50_000,
      ttl: opts.ttlMs,
      dispose: (entry, hash) => {
        if (entry.found && this.hashById.get(entry.found.keyId) === hash) this.hashById.delete(entry.found.keyId);
      },
    });
    this.negativeTtlMs = opts.negativeTtlMs ?? 5_000;
  }

  /** The cached answer without loading: a key, null for a known-unknown hash, undefined when not cached. */
  cached(hash: string): AuthenticatedKey | null | undefined {
    return this.byHash.get(hash)?.found;
  }

  async get(hash: string): Promise<AuthenticatedKey | null> {
    const hit = this.byHash.get(hash);
    if (hit) return hit.found;
    const generation = this.generation;
    let pending = this.inflight.get(hash);
    if (!pending) {
      pending = this.load(hash).finally(() => this.inflight.delete(hash));
      this.inflight.set(hash, pending);
    }
    const found = await pending;
    if (generation !== this.generation) return found;
    if (found) {
      this.byHash.set(hash, { found });
      this.hashById.set(found.keyId, hash);
    } else {
      this.byHash.set(hash, { found: null }, { ttl: this.negativeTtlMs });
    }
    return found;
  }

  evictKeyId(keyId: string): void {
    this.generation++;
    this.inflight.clear();
    const hash = this.hashById.get(keyId);
    if (hash) this.byHash.delete(hash);
    this.hashById.delete(keyId);
  }
}
