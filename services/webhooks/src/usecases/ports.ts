/**
 * Where a signed delivery goes out (the kit's OutboundClient in production): an answer, or why there was none and
 * whether that was the platform's own failure (`ours`: this side could not send), not the endpoint's.
 */
export interface Sender {
  post(
    url: string,
    headers: Record<string, string>,
    body: string,
    timeoutMs: number,
  ): Promise<{ statusCode: number; retryAfter?: string } | { error: string; ours?: boolean }>;
}
