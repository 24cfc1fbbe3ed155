import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { wasmThreads } from '../../src/lib/platform/gpu/backend';
import { join } from 'node:path';

/** Debian's Chromium; Playwright's own browser download cannot work offline. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Flags that work headless on these machines; WebGPU comes from SwiftShader's fallback adapter. */
export const CHROMIUM_ARGS = [
  '--headless=new',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--enable-unsafe-webgpu',
];

export interface Session {
  context: BrowserContext;
  page: Page;
  profileDir: string;
  /** Closes the browser but keeps the profile (IndexedDB survives a restart). */
  close(): Promise<void>;
  /** Closes the browser and deletes the profile. */
  dispose(): Promise<void>;
}

/** Launches Chromium with a persistent profile (a fresh one unless `profileDir` is given). */
export async function launch(opts: { profileDir?: string; downloadsDir?: string } = {}): Promise<Session> {
  const profileDir = opts.profileDir ?? mkdtempSync(join(tmpdir(), 'loupe-profile-'));
  const context = await chromium.launchPersistentContext(profileDir, {
    executablePath: CHROMIUM,
    args: CHROMIUM_ARGS,
    headless: true,
    acceptDownloads: true,
    viewport: { width: 1400, height: 1000 },
  });
  const page = context.pages()[0] ?? (await context.newPage());
  // A first load is slow on a busy 2-core machine (and with LOUPE_E2E_SERVER=dev, which compiles the app).
  context.setDefaultNavigationTimeout(120_000);
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(`${m.text()} (${m.location().url})`);
  });
  (page as Page & { loupeErrors?: string[] }).loupeErrors = errors;
  const close = async () => {
    await context.close();
  };
  return {
    context,
    page,
    profileDir,
    close,
    dispose: async () => {
      await close();
      rmSync(profileDir, { recursive: true, force: true });
    },
  };
}

/** Page errors and console errors collected since launch. */
/**
 * The WASM threads a cross-origin-isolated page gets from this browser's cores (the app's own rule:
 * 2, or 1 where the browser sees one core, as under test:slow).
 */
export async function isolatedWasmThreads(page: Page): Promise<number> {
  return wasmThreads(true, await page.evaluate(() => navigator.hardwareConcurrency));
}

export function pageErrors(page: Page): string[] {
  return (page as Page & { loupeErrors?: string[] }).loupeErrors ?? [];
}

/** A page harness: an object of functions that tests call through page.evaluate. */
type AnyHarness = { [fn: string]: (...args: never[]) => unknown };

/**
 * A typed caller for the harness object a test page puts on `window[name]`:
 * `call(page, 'fn', ...args)` runs `window[name].fn(...args)` in the page and resolves to its result.
 */
export function harnessCaller<H extends AnyHarness>(name: string) {
  return <K extends keyof H & string>(
    page: Page,
    fn: K,
    ...args: Parameters<H[K]>
  ): Promise<Awaited<ReturnType<H[K]>>> =>
    page.evaluate(
      ([name, fn, args]) =>
        (window as unknown as Record<string, Record<string, (...a: unknown[]) => unknown>>)[name][fn](
          ...args,
        ),
      [name, fn, args] as const,
    ) as Promise<Awaited<ReturnType<H[K]>>>;
}

/** Clicks the button `testId` and returns the text of the file it downloads. */
export async function download(page: Page, testId: string): Promise<string> {
  const [dl] = await Promise.all([page.waitForEvent('download'), page.click(`[data-testid="${testId}"]`)]);
  return readFileSync(await dl.path(), 'utf8');
}

/**
 * How long `phase` waits at most: a limit that catches a hang (a phase that never comes), far above
 * any wait's work on a slow machine; a test's own limit (180 s unless it says more) usually ends first.
 */
export const PHASE_WAIT_MS = 300_000;

/**
 * Waits until the app's phase (`data-phase` of `[data-testid="app"]`) is one of `phases` and returns
 * the one it is.
 */
export async function phase(page: Page, ...phases: string[]): Promise<string> {
  const sel = phases.map((p) => `[data-testid="app"][data-phase="${p}"]`).join(', ');
  await page.waitForSelector(sel, { timeout: PHASE_WAIT_MS });
  return (await page.getAttribute('[data-testid="app"]', 'data-phase')) ?? '';
}
