/** Where a signed delivery goes out (the kit's OutboundClient in production): an answer or why there was none. */
export interface Sender {
  post(
    url: string,
    headers: Record<string, string>,
    body: string,
    timeoutMs: number,
  ): Promise<{ statusCode: number; retryAfter?: string } | { error: string }>;
}
