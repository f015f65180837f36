/**
 * The web client rendering a fast answer: Chromium (Debian's) shows a 1,500-token answer
 * streamed at 100 tokens a second, Markdown and all, while the Long Tasks API records every
 * main-thread task over 50 ms. Prints the count and the longest.
 *
 * The Long Tasks API counts wall time: on a loaded machine a task the scheduler pauses looks
 * long. So a Chromium trace of the same run also gives each of the page's main-thread tasks'
 * CPU time (`tdur`): `cpu_tasks_over_50ms` counts what the page itself made long, and
 * `redraw_cpu_ms` what each task that ran an animation frame (a redraw: the page's own
 * callbacks, Preact, style, layout and paint) cost in CPU, as median / 90th percentile / max.
 *
 *   node bench/web-long-tasks.ts [earlier turns, default 0]
 *
 * With earlier turns, the page opens on a conversation of that many turns (each a 300-token
 * Markdown answer; the first history page shows 20), as a user's usually does.
 */
import { reply } from '../test/support/fake-llm-server.ts';
import { load } from './support/machine.ts';
import { longAnswer, onRendererMain, type TraceEvent, withWebChat } from './support/web-answer.ts';

const TOKENS = 1_500;
const RATE = 100; // tokens per second
const earlier = Number(process.argv[2] ?? 0);
const text = longAnswer(TOKENS);

await withWebChat(earlier, async ({ llm, browser, page, ask }) => {
  await page.evaluate(`
    window.__long = [];
    new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) window.__long.push(entry.duration);
    }).observe({ type: 'longtask' });
  `);
  await browser.startTracing(page, { categories: ['disabled-by-default-devtools.timeline'] });
  llm.enqueue(reply.text(text, { chunks: TOKENS, delayMs: 1000 / RATE }));
  const started = Date.now();
  await ask('Write a lot');
  const seconds = (Date.now() - started) / 1000;
  // The answer must have been on screen as it grew (the page follows it), or its drawing was
  // skipped and the figures flatter it.
  const followed = await page
    .locator('.log')
    .evaluate((log) => log.scrollHeight - log.scrollTop - log.clientHeight < 40);
  const long = (await page.evaluate('window.__long')) as number[];
  const tasks = mainThreadTasks(JSON.parse((await browser.stopTracing()).toString('utf8')));
  const cpuLong = tasks.filter((task) => task.cpuMs > 50);
  const redraws = tasks
    .filter((task) => task.redraw)
    .map((task) => task.cpuMs)
    .sort((a, b) => a - b);
  const at = (q: number) => Number((redraws[Math.floor(q * (redraws.length - 1))] ?? 0).toFixed(1));
  const chars = (await page.locator('.bubble.assistant .md').last().textContent())?.length ?? 0;
  console.log(
    JSON.stringify({
      tokens: TOKENS,
      tokens_per_second: RATE,
      earlier_turns: earlier,
      followed,
      stream_seconds: Number(seconds.toFixed(1)),
      answer_chars: chars,
      long_tasks_over_50ms: long.length,
      longest_task_ms: long.length ? Math.max(...long) : 0,
      cpu_tasks_over_50ms: cpuLong.length,
      longest_task_cpu_ms: Math.round(Math.max(0, ...tasks.map((task) => task.cpuMs))),
      page_cpu_ms: Math.round(tasks.reduce((sum, task) => sum + task.cpuMs, 0)),
      redraws: redraws.length,
      redraw_cpu_ms: [at(0.5), at(0.9), at(1)],
      load: load(),
    }),
  );
});

/**
 * The renderer main thread's tasks (`RunTask`) from a Chromium trace, with their CPU time and
 * whether they ran an animation frame callback (`FireAnimationFrame` inside the task).
 */
function mainThreadTasks(trace: { traceEvents: TraceEvent[] }) {
  const isMain = onRendererMain(trace);
  const frames = trace.traceEvents
    .filter((event) => event.name === 'FireAnimationFrame' && isMain(event))
    .map((event) => event.ts)
    .sort((a, b) => a - b);
  return trace.traceEvents
    .filter((event) => event.name === 'RunTask' && event.ph === 'X' && isMain(event))
    .map((event) => {
      const end = event.ts + (event.dur ?? 0);
      const redraw = frames.some((ts) => ts >= event.ts && ts <= end);
      return { cpuMs: (event.tdur ?? 0) / 1000, redraw };
    });
}
