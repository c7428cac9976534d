/**
 * Records `lastUsedAt` without a database write per request: at most one write per key per
 * `resolutionMs` on each replica, off the request path.
 */
export class LastUsedRecorder {
  private readonly lastWrite = new Map<string, number>();

  constructor(
    private readonly write: (keyId: string, at: Date) => Promise<void>,
    private readonly resolutionMs: number,
    private readonly onError: (err: unknown) => void,
  ) {}

  used(keyId: string, now = Date.now()): void {
    const last = this.lastWrite.get(keyId);
    if (last !== undefined && now - last < this.resolutionMs) return;
    this.lastWrite.set(keyId, now);
    this.write(keyId, new Date(now)).catch((err: unknown) => {
      this.lastWrite.delete(keyId);
      this.onError(err);
    });
  }
}
