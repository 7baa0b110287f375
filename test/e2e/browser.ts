/**
 * Browser tests of the admin console: the console built once per run (when missing or older than its
 * sources), Debian's Chromium driven through playwright-core, sign-in helpers and screenshots under
 * test-output/screenshots.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { CONSOLE_DIR } from '../../src/app/console.js';
import { postgresReachable, storeKinds, type StoreKind } from '../helpers/stores.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SOURCES = [join(ROOT, 'console/src'), join(ROOT, 'console/index.html'), join(ROOT, 'console/vite.config.ts')];
const BUILT = join(CONSOLE_DIR, 'index.html');
const LOCK = join(ROOT, 'dist/.console-build.lock');
export const SCREENSHOTS = join(ROOT, 'test-output/screenshots');

function newestMtime(path: string): number {
  if (!existsSync(path)) return 0;
  const st = statSync(path);
  if (!st.isDirectory()) return st.mtimeMs;
  return Math.max(st.mtimeMs, ...readdirSync(path).map((name) => newestMtime(join(path, name))));
}

function isStale(): boolean {
  return !existsSync(BUILT) || newestMtime(BUILT) < Math.max(...SOURCES.map(newestMtime));
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Builds dist/console when it is missing or older than console/. Test files run in parallel, so the
 * build is taken under a directory lock (mkdir is atomic); a lock older than two minutes is a crashed
 * build's and is taken over.
 */
export async function ensureConsoleBuilt(): Promise<void> {
  if (!isStale()) return;
  mkdirSync(join(ROOT, 'dist'), { recursive: true });
  for (;;) {
    try {
      mkdirSync(LOCK);
      break;
    } catch {
      if (!isStale()) return;
      try {
        if (Date.now() - statSync(LOCK).mtimeMs > 120_000) rmdirSync(LOCK);
      } catch {
        // Released meanwhile.
      }
      await sleep(200);
    }
  }
  try {
    if (!isStale()) return;
    const vite = join(ROOT, 'node_modules/vite/bin/vite.js');
    const r = spawnSync(process.execPath, [vite, 'build', '--config', 'console/vite.config.ts', '--logLevel', 'warn'], { cwd: ROOT, encoding: 'utf8', timeout: 120_000 });
    if (r.status !== 0) throw new Error(`building the console failed (${r.status ?? r.signal}):\n${r.stdout}\n${r.stderr}`);
  } finally {
    rmdirSync(LOCK);
  }
}

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/**
 * The browser suites' `skip` option: outside CI a machine without Chromium skips them with the reason; in CI
 * they run and fail, as a missing PostgreSQL does.
 */
export const skipWithoutBrowser: string | false =
  !existsSync(CHROMIUM) && !process.env.CI ? `Chromium not found at ${CHROMIUM} (set CHROMIUM_PATH); skipping the browser tests` : false;

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'],
  });
}

/**
 * A fresh browser context (its own cookie jar) on the replica. Page errors and Content-Security-Policy
 * violations are collected so a test can assert there were none.
 */
export async function openConsole(browser: Browser, baseURL: string): Promise<{ context: BrowserContext; page: Page; problems: string[] }> {
  const context = await browser.newContext({ baseURL, viewport: { width: 1400, height: 900 } });
  // Generous: CI runs four test files at once on two cores; a step that is merely slow must not fail.
  context.setDefaultTimeout(30_000);
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error' && !/the server responded with a status of 4\d\d/.test(msg.text())) problems.push(`console error: ${msg.text()}`);
  });
  return { context, page, problems };
}

/** Signs in on the console's sign-in page and waits for the shell. */
export async function signIn(page: Page, token: string): Promise<void> {
  await page.goto('/');
  await page.getByLabel('Personal access token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByTestId('whoami').waitFor();
}

export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

/**
 * The one store the browser suites run on: PostgreSQL when the matrix has it and it is reachable (what a
 * deployment with several replicas uses), else PGlite. The console does not depend on the store; the
 * integration suites cover both.
 */
export async function browserStoreKind(): Promise<StoreKind> {
  const kinds = storeKinds();
  if (kinds.includes('postgres') && (await postgresReachable())) return 'postgres';
  return 'pglite';
}
