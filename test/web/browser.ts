import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';

/** Debian's Chromium (`apt-get install -y chromium`, done by .ci/run); never a downloaded one. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** The window most browser tests use: a desktop's. */
export const DESKTOP = { width: 1000, height: 720 };

/** A new browser profile (nothing shared with any other), English, in a window of `viewport`. */
export function englishContext(
  browser: Browser,
  viewport: { width: number; height: number } = DESKTOP,
): Promise<BrowserContext> {
  return browser.newContext({ locale: 'en-US', viewport });
}

/** Opens `url` (where the page asks for a key) and signs in with `key`, as a person would. */
export async function signIn(page: Page, url: string, key: string): Promise<void> {
  await page.goto(url);
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

/**
 * Starts headless Chromium. A missing browser is a failure, not a skip: CI installs it, and a
 * browser test that quietly does not run would let the web client break unseen.
 */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `No Chromium at ${CHROMIUM}: run \`apt-get install -y chromium\` (as .ci/run does) or set CHROMIUM_PATH`,
    );
  }
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--no-sandbox',
      '--headless',
      '--disable-gpu',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  return withTestLatency(browser);
}

/**
 * Opt-in slow network: with PARLEY_TEST_WEB_LATENCY_MS=N every context (and page) made from the
 * browser delays each of the page's API requests (fetch/XHR/EventSource, not its static files)
 * by a random 0..N ms before sending it. CI machines under load reorder and delay responses;
 * this makes a test that acts before what a user would see, or a client that lets a stale
 * response win, fail here first. Only the request start is delayed, so streams still stream.
 */
function withTestLatency(browser: Browser): Browser {
  const maxMs = Number(process.env.PARLEY_TEST_WEB_LATENCY_MS ?? 0);
  if (!(maxMs > 0)) return browser;
  const slow = async (context: BrowserContext) => {
    await context.route('**/*', async (route) => {
      const type = route.request().resourceType();
      if (type === 'fetch' || type === 'xhr' || type === 'eventsource') {
        await new Promise((resolve) => setTimeout(resolve, Math.random() * maxMs));
      }
      await route.continue().catch(() => {}); // the page may have closed meanwhile
    });
    return context;
  };
  const newContext = browser.newContext.bind(browser);
  browser.newContext = async (options) => slow(await newContext(options));
  browser.newPage = async (options) => {
    const context = await browser.newContext(options);
    const page = await context.newPage();
    page.on('close', () => void context.close());
    return page;
  };
  return browser;
}

const require = createRequire(import.meta.url);
let axeSource: string | undefined;

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: Array<{ target: unknown[] }>;
}

/**
 * Runs axe-core in the page. It is evaluated through the DevTools protocol, which the page's
 * Content-Security-Policy (no inline script) does not govern; the page itself is unchanged.
 */
export async function seriousViolations(page: Page): Promise<AxeViolation[]> {
  axeSource ??= await readFile(require.resolve('axe-core/axe.min.js'), 'utf8');
  await page.evaluate(axeSource);
  const violations = (await page.evaluate(
    'axe.run(document, { resultTypes: ["violations"] }).then((r) => r.violations)',
  )) as AxeViolation[];
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}

/**
 * Holds back the page's requests matching `url` (GET unless `method` says otherwise): each is
 * sent at once, and its answer reaches the page only after `release`, as on a slow network.
 * `release` lets them all through and stops holding.
 */
export async function holdResponses(
  page: Page,
  url: RegExp,
  method = 'GET',
): Promise<{ release: () => Promise<void> }> {
  let open = () => {};
  const released = new Promise<void>((resolve) => {
    open = resolve;
  });
  const held: Promise<void>[] = [];
  await page.route(url, (route) => {
    if (route.request().method() !== method) return route.fallback();
    const answered = route.fetch().then(async (response) => {
      await released;
      await route.fulfill({ response });
    });
    held.push(answered);
    return answered;
  });
  return {
    release: async () => {
      open();
      await Promise.all(held);
      await page.unroute(url);
    },
  };
}
