/**
 * Summarises a V8 .cpuprofile (from `node --cpu-prof`): self time by package (the first
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
const byArea = new Map<string, number>();
const byFunction = new Map<string, number>();
let total = 0;
for (const [id, us] of selfUs) {
  const frame = (byId.get(id) as Node).callFrame;
  total += us;
  byArea.set(area(frame.url), (byArea.get(area(frame.url)) ?? 0) + us);
  const name = `${frame.functionName || '(anonymous)'} ${area(frame.url)}:${frame.lineNumber + 1}`;
  byFunction.set(name, (byFunction.get(name) ?? 0) + us);
}
const print = (title: string, map: Map<string, number>, top: number) => {
  console.log(`\n${title}`);
  for (const [name, us] of [...map].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    console.log(
      `${(us / 1000).toFixed(0).padStart(8)} ms ${((us / total) * 100).toFixed(1).padStart(5)} %  ${name}`,
    );
  }
};
console.log(`${file}: ${(total / 1000).toFixed(0)} ms sampled`);
print('self time by package', byArea, 20);
print('self time by function', byFunction, Number(topArg ?? 25));
