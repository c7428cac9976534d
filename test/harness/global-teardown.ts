/** Stops servers the harness started itself (nothing when they came from the environment). */
export default async function globalTeardown(): Promise<void> {
  await globalThis.__voiceapiInfra?.stop();
  globalThis.__voiceapiInfra = undefined;
}
