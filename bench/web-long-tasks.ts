/**
 * The web client rendering a fast answer: Chromium (Debian's) shows a 1,500-token answer
 * streamed at 100 tokens a second, Markdown and all, while the Long Tasks API records every
 * main-thread task over 50 ms. Prints the count and the longest.
 *
 * The Long Tasks API counts wall time: on a loaded machine a task the scheduler pauses looks
 * long. So a Chromium trace of the same run also gives each of the page's main-thread tasks'
 * CPU time (`tdur`): `cpu_tasks_over_50ms` counts what the page itself made long.
 *
 *   node bench/web-long-tasks.ts
 */
import { reply, startFakeLlmServer } from '../test/support/fake-llm-server.ts';
import { startParley } from '../test/support/start-parley.ts';
import { launchChromium } from '../test/web/browser.ts';

const TOKENS = 1_500;
const RATE = 100; // tokens per second

// Markdown that costs something to render: paragraphs, a list, code, a table.
const pieces = ['The **answer**', ' has', ' `code`', ',', ' lists', ' and', ' words', '.'];
const text = Array.from({ length: TOKENS }, (_, i) => {
  if (i % 200 === 199) return '\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n';
  if (i % 50 === 49) return '\n\n- item\n- item\n\n```js\nconst x = 1;\n```\n\n';
  return pieces[i % pieces.length];
}).join('');

const llm = await startFakeLlmServer();
const parley = await startParley({ env: { LLM_BASE_URL: llm.url, LLM_MAX_RETRIES: '0' } });
const browser = await launchChromium();
try {
  const page = await browser.newPage({ viewport: { width: 1000, height: 720 } });
  await page.goto(parley.url);
  await page.getByLabel('User name').fill('bench');
  await page.getByRole('button', { name: 'Sign in' }).click();
  const box = page.getByRole('textbox', { name: 'Message' });
  await box.waitFor();
  await page.evaluate(`
    window.__long = [];
    new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) window.__long.push(entry.duration);
    }).observe({ type: 'longtask' });
  `);
  await browser.startTracing(page, { categories: ['disabled-by-default-devtools.timeline'] });
  llm.enqueue(reply.text(text, { chunks: TOKENS, delayMs: 1000 / RATE }));
  const started = Date.now();
  await box.fill('Write a lot');
  await box.press('Enter');
  await page.locator('.bubble.assistant[aria-busy="true"]').waitFor();
  await page.locator('.bubble.assistant[aria-busy="true"]').waitFor({
    state: 'detached',
    timeout: 120_000,
  });
  const seconds = (Date.now() - started) / 1000;
  const long = (await page.evaluate('window.__long')) as number[];
  const tasks = mainThreadTasks(JSON.parse((await browser.stopTracing()).toString('utf8')));
  const cpuLong = tasks.filter((task) => task.cpuMs > 50);
  const chars = (await page.locator('.bubble.assistant .md').last().textContent())?.length ?? 0;
  console.log(
    JSON.stringify({
      tokens: TOKENS,
      tokens_per_second: RATE,
      stream_seconds: Number(seconds.toFixed(1)),
      answer_chars: chars,
      long_tasks_over_50ms: long.length,
      longest_task_ms: long.length ? Math.max(...long) : 0,
      cpu_tasks_over_50ms: cpuLong.length,
      longest_task_cpu_ms: Math.round(Math.max(0, ...tasks.map((task) => task.cpuMs))),
      page_cpu_ms: Math.round(tasks.reduce((sum, task) => sum + task.cpuMs, 0)),
    }),
  );
} finally {
  await browser.close();
  await parley.stop();
  await llm.close();
}

interface TraceEvent {
  name: string;
  ph: string;
  pid: number;
  tid: number;
  tdur?: number;
  args?: { name?: string };
}

/** The renderer main thread's tasks (`RunTask`) from a Chromium trace, with their CPU time. */
function mainThreadTasks(trace: { traceEvents: TraceEvent[] }) {
  const main = trace.traceEvents.filter(
    (event) => event.name === 'thread_name' && event.args?.name === 'CrRendererMain',
  );
  const isMain = (event: TraceEvent) =>
    main.some((thread) => thread.pid === event.pid && thread.tid === event.tid);
  return trace.traceEvents
    .filter((event) => event.name === 'RunTask' && event.ph === 'X' && isMain(event))
    .map((event) => ({ cpuMs: (event.tdur ?? 0) / 1000 }));
}
