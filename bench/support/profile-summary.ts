/**
 * Summarises a V8 .cpuprofile (from `node --cpu-prof`): busy time by owner (the AI SDK's
 * stream pipeline, HTTP, the database, Parley's own code…), self time by package (the first
 * `node_modules/<name>` in the script URL, or `src/…`, `node:…`) and the top functions.
 *
 *   node bench/support/profile-summary.ts <file.cpuprofile> [top=25] [skipMs=0]
 *
 * `skipMs` leaves out the first milliseconds of the profile (start-up, module loading).
 */
import { readFileSync } from 'node:fs';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}
interface Profile {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
}

const [file, topArg, skipArg] = process.argv.slice(2);
if (!file) throw new Error('usage: profile-summary.ts <file.cpuprofile> [top]');
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const selfUs = new Map<number, number>();
const skipUs = Number(skipArg ?? 0) * 1000;
let elapsedUs = 0;
profile.samples.forEach((id, i) => {
  const delta = profile.timeDeltas[i] ?? 0;
  elapsedUs += delta;
  if (elapsedUs >= skipUs) selfUs.set(id, (selfUs.get(id) ?? 0) + delta);
});

const area = (url: string): string => {
  if (url === '') return '(native/idle/gc)';
  const modules = /node_modules\/((@[^/]+\/)?[^/]+)/.exec(url);
  if (modules) return modules[1] as string;
  const src = /\/(src\/[^/]+\/?[^/]*)/.exec(url);
  if (src) return src[1] as string;
  return url.startsWith('node:') ? url : url.replace(/^.*\//, '');
};
/** Who the time is spent for; idle time is left out of this grouping. */
const owner = (frame: Node['callFrame']): string | undefined => {
  const { url, functionName: name } = frame;
  if (name === '(idle)') return undefined;
  if (/webstreams|internal\/encoding/.test(url) || name === 'runMicrotasks')
    return 'web streams + microtasks (the AI SDK pipeline, fetch bodies)';
  if (/node_modules\/(ai|@ai-sdk\/[^/]+|eventsource-parser|zod)\//.test(url))
    return 'AI SDK code (ai, provider, SSE parser, zod)';
  if (/undici/.test(url)) return 'undici (requests to the model)';
  if (/node_modules\/(pg|pg-[^/]+|drizzle-orm)\//.test(url)) return 'database client (pg, drizzle)';
  if (/\/src\//.test(url)) return "Parley's src/";
  if (name === '(garbage collector)') return 'garbage collector';
  if (/node:net|stream_base|_http|internal\/streams|fastify|pino/.test(url) || name === 'writev')
    return 'HTTP, sockets, Node streams (writes to clients)';
  return 'other (native, timers, Node internals)';
};
const byOwner = new Map<string, number>();
let busy = 0;
const byArea = new Map<string, number>();
const byFunction = new Map<string, number>();
let total = 0;
for (const [id, us] of selfUs) {
  const frame = (byId.get(id) as Node).callFrame;
  total += us;
  const who = owner(frame);
  if (who) {
    busy += us;
    byOwner.set(who, (byOwner.get(who) ?? 0) + us);
  }
  byArea.set(area(frame.url), (byArea.get(area(frame.url)) ?? 0) + us);
  const name = `${frame.functionName || '(anonymous)'} ${area(frame.url)}:${frame.lineNumber + 1}`;
  byFunction.set(name, (byFunction.get(name) ?? 0) + us);
}
const print = (title: string, map: Map<string, number>, top: number, of = total) => {
  console.log(`\n${title}`);
  for (const [name, us] of [...map].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    console.log(
      `${(us / 1000).toFixed(0).padStart(8)} ms ${((us / of) * 100).toFixed(1).padStart(5)} %  ${name}`,
    );
  }
};
console.log(
  `${file}: ${(total / 1000).toFixed(0)} ms sampled, ${(busy / 1000).toFixed(0)} ms busy`,
);
print('busy time by owner (share of busy time)', byOwner, 10, busy);
print('self time by package', byArea, 20);
print('self time by function', byFunction, Number(topArg ?? 25));
