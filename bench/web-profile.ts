/**
 * Where the web client's main thread spends its time while a fast answer streams: the same
 * page and answer as bench/web-long-tasks.ts, with a sampling CPU profile (DevTools protocol)
 * of the page. The page gets an unminified build of web/src (swapped in for the served one),
 * so the profile names functions. Prints the functions with the most self time and the most
 * total time (inclusive of what they call).
 *
 *   node bench/web-profile.ts [earlier turns, default 0]
 *
 * Not a benchmark of its own (profiling and an unminified bundle both cost time): use it to
 * find what to change, and bench/web-long-tasks.ts to measure.
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';
import { reply } from '../test/support/fake-llm-server.ts';
import { longAnswer, onRendererMain, type TraceEvent, withWebChat } from './support/web-answer.ts';

const earlier = Number(process.argv[2] ?? 0);
const TOKENS = 1_500;
const RATE = 100;

const bundle = await esbuild.build({
  entryPoints: [join(fileURLToPath(new URL('../web/src', import.meta.url)), 'main.tsx')],
  bundle: true,
  minify: false,
  format: 'esm',
  jsx: 'automatic',
  jsxImportSource: 'preact',
  define: { 'process.env.NODE_ENV': '"production"' },
  write: false,
  outdir: '/tmp/parley-web-profile',
  logLevel: 'warning',
});
const script = bundle.outputFiles.find((file) => file.path.endsWith('.js'))?.text ?? '';

await withWebChat(
  earlier,
  async ({ llm, browser, page, ask }) => {
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('Profiler.enable');
    await cdp.send('Profiler.setSamplingInterval', { interval: 200 });
    await cdp.send('Profiler.start');
    await browser.startTracing(page, {
      categories: ['devtools.timeline', 'disabled-by-default-devtools.timeline'],
    });
    llm.enqueue(reply.text(longAnswer(TOKENS), { chunks: TOKENS, delayMs: 1000 / RATE }));
    await ask('Write a lot');
    const { profile } = (await cdp.send('Profiler.stop')) as { profile: CpuProfile };
    const trace = JSON.parse((await browser.stopTracing()).toString('utf8'));
    const chars = (await page.locator('.bubble.assistant .md').last().textContent())?.length ?? 0;
    console.log(`answer: ${chars} characters; unexpected model requests: ${llm.unexpected.length}`);
    report(profile);
    redrawBreakdown(trace);
  },
  (page) =>
    page.route('**/assets/main-*.js', (route) =>
      route.fulfill({ body: script, contentType: 'text/javascript' }),
    ),
);

interface CpuProfile {
  nodes: Array<{
    id: number;
    callFrame: { functionName: string; url: string; lineNumber: number };
    children?: number[];
  }>;
  samples: number[];
  timeDeltas: number[];
}

function report(profile: CpuProfile) {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes)
    for (const child of node.children ?? []) parent.set(child, node.id);
  const name = (id: number) => {
    const frame = byId.get(id)?.callFrame;
    if (!frame) return '?';
    const file = frame.url.split('/').pop() || '';
    return `${frame.functionName || '(anonymous)'} ${file}:${frame.lineNumber + 1}`;
  };
  const self = new Map<string, number>();
  const total = new Map<string, number>();
  let all = 0;
  profile.samples.forEach((id, i) => {
    const ms = (profile.timeDeltas[i + 1] ?? 0) / 1000;
    const label = name(id);
    if (label.startsWith('(idle)')) return;
    all += ms;
    self.set(label, (self.get(label) ?? 0) + ms);
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const outer = name(at);
      if (seen.has(outer)) continue;
      seen.add(outer);
      total.set(outer, (total.get(outer) ?? 0) + ms);
    }
  });
  const top = (map: Map<string, number>) =>
    [...map]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 25)
      .map(([label, ms]) => `  ${ms.toFixed(0).padStart(6)} ms  ${label}`)
      .join('\n');
  console.log(`busy (not idle): ${all.toFixed(0)} ms\n\nself time:\n${top(self)}`);
  console.log(`\ntotal time:\n${top(total)}`);
}

/**
 * CPU time (self: minus the events nested in it) of each kind of trace event inside the main
 * thread's tasks that ran an animation frame: what one redraw spends on script, style,
 * layout, paint.
 */
function redrawBreakdown(trace: { traceEvents: TraceEvent[] }) {
  const isMain = onRendererMain(trace);
  const events = trace.traceEvents
    .filter((e) => isMain(e) && e.ph === 'X' && e.tdur !== undefined)
    .sort((a, b) => a.ts - b.ts || (b.dur ?? 0) - (a.dur ?? 0));
  const self = new Map<string, number>();
  let redraws = 0;
  let stack: TraceEvent[] = [];
  let inRedraw = false;
  let pending = new Map<string, number>();
  const flush = () => {
    if (inRedraw) for (const [name, ms] of pending) self.set(name, (self.get(name) ?? 0) + ms);
    pending = new Map();
    inRedraw = false;
  };
  for (const event of events) {
    while (
      stack.length &&
      (stack.at(-1) as TraceEvent).ts + ((stack.at(-1) as TraceEvent).dur ?? 0) <= event.ts
    )
      stack.pop();
    if (!stack.length) {
      flush();
      stack = [];
    }
    if (event.name === 'FireAnimationFrame' && !inRedraw) {
      inRedraw = true;
      redraws++;
    }
    const ms = (event.tdur ?? 0) / 1000;
    pending.set(event.name, (pending.get(event.name) ?? 0) + ms);
    const parent = stack.at(-1);
    if (parent) pending.set(parent.name, (pending.get(parent.name) ?? 0) - ms);
    stack.push(event);
  }
  flush();
  const rows = [...self]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 15)
    .map(([name, ms]) => `  ${(ms / redraws).toFixed(2).padStart(6)} ms  ${name}`);
  console.log(`\nper redraw (${redraws} redraws), self CPU by trace event:\n${rows.join('\n')}`);
}
