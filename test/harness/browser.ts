import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';

/** Debian's Chromium (scripts/install-chromium.sh); playwright-core never downloads a browser. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export interface Browser {
  context: BrowserContext;
  /** Closes the browser and removes its profile. */
  close(): Promise<void>;
}

/**
 * Headless Chromium with a new empty profile, started with the flags this machine needs: no
 * background networking, updates or sync (the network is closed: without them Chromium keeps
 * dialling out and failing), no GPU, no sandbox (tests run as root).
 */
export async function launchBrowser(): Promise<Browser> {
  const profile = mkdtempSync(path.join(tmpdir(), 'voiceapi-chromium-'));
  const context = await chromium
    .launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      chromiumSandbox: false,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    })
    .catch((err: unknown) => {
      rmSync(profile, { recursive: true, force: true });
      throw new Error(`could not start ${CHROMIUM} (bash scripts/install-chromium.sh installs it): ${String(err)}`);
    });
  return {
    context,
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
