import type { Browser, Locator, Page } from 'playwright-core';
import {
  type FakeLlmServer,
  reply,
  startFakeLlmServer,
} from '../../test/support/fake-llm-server.ts';
import { type RunningParley, startParley } from '../../test/support/start-parley.ts';
import { launchChromium } from '../../test/web/browser.ts';

/** Markdown that costs something to render: paragraphs, bold, inline code, lists, code, tables. */
export function longAnswer(tokens: number): string {
  const pieces = ['The **answer**', ' has', ' `code`', ',', ' lists', ' and', ' words', '.'];
  return Array.from({ length: tokens }, (_, i) => {
    if (i % 200 === 199) return '\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n';
    if (i % 50 === 49) return '\n\n- item\n- item\n\n```js\nconst x = 1;\n```\n\n';
    return pieces[i % pieces.length];
  }).join('');
}

/**
 * Gives `user` a conversation of `turns` earlier turns (each a 300-token Markdown answer) over
 * the API, so the page opens on a conversation, as a user's usually does: the first page of
 * history shows 20 of them.
 */
export async function seedHistory(
  parley: RunningParley,
  llm: FakeLlmServer,
  user: string,
  turns: number,
): Promise<void> {
  for (let i = 0; i < turns; i++) {
    llm.enqueue(reply.text(longAnswer(300), { chunks: 10 }));
    const response = await parley.fetch('/chat', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ message: `Earlier question ${i + 1}`, user_id: user }),
    });
    if (!response.ok) throw new Error(`seeding the history: HTTP ${response.status}`);
    await response.text();
  }
}

/**
 * Opens Parley on `page`, signs `user` in (development mode) and waits until the message box
 * and the first page of the `earlier` turns are shown. Returns the message box.
 */
export async function openSignedIn(
  page: Page,
  parley: RunningParley,
  user: string,
  earlier: number,
): Promise<Locator> {
  await page.goto(parley.url);
  await page.getByLabel('User name').fill(user);
  await page.getByRole('button', { name: 'Sign in' }).click();
  const box = page.getByRole('textbox', { name: 'Message' });
  await box.waitFor();
  if (earlier > 0)
    await page
      .locator('.turn')
      .nth(Math.min(earlier, 20) - 1)
      .waitFor();
  return box;
}

/** One event of a Chromium trace (the fields the web benchmarks read). */
export interface TraceEvent {
  name: string;
  ph: string;
  pid: number;
  tid: number;
  ts: number;
  dur?: number;
  tdur?: number;
  args?: { name?: string };
}

/** What a web benchmark drives: the page signed in on a conversation of `earlier` turns. */
export interface WebChatBench {
  llm: FakeLlmServer;
  browser: Browser;
  page: Page;
  /** The message box. */
  box: Locator;
  /** Sends `message` from the box and resolves once its answer has streamed to its end. */
  ask(message: string): Promise<void>;
}

/**
 * Parley with a fake model and Debian's Chromium, `bench` signed in on `earlier` turns; runs
 * `measure`, then stops them all. `prepare` runs on the page before it opens Parley (routes).
 */
export async function withWebChat(
  earlier: number,
  measure: (bench: WebChatBench) => Promise<void>,
  prepare?: (page: Page) => Promise<unknown>,
): Promise<void> {
  // Whatever started is stopped, also when a later start fails.
  const stops: (() => Promise<unknown>)[] = [];
  try {
    const llm = await startFakeLlmServer();
    stops.unshift(() => llm.close());
    const parley = await startParley({
      // The earlier turns are chats too: the per-minute limit must not refuse the measured one.
      env: { LLM_BASE_URL: llm.url, LLM_MAX_RETRIES: '0', LIMIT_CHATS_PER_MINUTE: '1000' },
    });
    stops.unshift(() => parley.stop());
    const browser = await launchChromium();
    stops.unshift(() => browser.close());
    await seedHistory(parley, llm, 'bench', earlier);
    const page = await browser.newPage({ viewport: { width: 1000, height: 720 } });
    await prepare?.(page);
    const box = await openSignedIn(page, parley, 'bench', earlier);
    const ask = async (message: string) => {
      await box.fill(message);
      await box.press('Enter');
      const answering = page.locator('.bubble.assistant[aria-busy="true"]');
      await answering.waitFor();
      await answering.waitFor({ state: 'detached', timeout: 120_000 });
    };
    await measure({ llm, browser, page, box, ask });
  } finally {
    for (const stop of stops) await stop();
  }
}

/**
 * Whether a trace event ran on a renderer's main thread (`CrRendererMain`): every renderer
 * the trace names, since the first one named need not be the page's.
 */
export function onRendererMain(trace: { traceEvents: TraceEvent[] }) {
  const main = trace.traceEvents.filter(
    (event) => event.name === 'thread_name' && event.args?.name === 'CrRendererMain',
  );
  return (event: TraceEvent) =>
    main.some((thread) => thread.pid === event.pid && thread.tid === event.tid);
}
