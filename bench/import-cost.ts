/**
 * Supporting measurement for startup and memory: what loading Drizzle's node-postgres entry
 * costs a fresh Node process, through ESM `import` (as src/ does) and through CJS `require`.
 * Each variant runs 3 times in a new process.
 *
 *   node bench/import-cost.ts
 */
import { execFileSync } from 'node:child_process';
import { load, machineReport } from './support/machine.ts';

const probe = (loader: string) => `
  const startedAt = performance.now();
  ${loader};
  const took = performance.now() - startedAt;
  const { rss, heapTotal } = process.memoryUsage();
  console.log(JSON.stringify({ took, rss, heapTotal }));`;
const variants: [string, string, string[]][] = [
  ['ESM import()', probe("await import('drizzle-orm/node-postgres')"), ['--input-type=module']],
  ['CJS require()', probe("require('drizzle-orm/node-postgres')"), ['--input-type=commonjs']],
];

console.log('## import-cost\n');
console.log(`\`\`\`\n${machineReport()}\n\`\`\`\n`);
console.log('| drizzle-orm/node-postgres via | run | load time | heapTotal after | VmRSS after |');
console.log('| --- | ---: | ---: | ---: | ---: |');
for (const [name, code, flags] of variants) {
  for (let run = 1; run <= 3; run++) {
    const out = execFileSync(process.execPath, [...flags, '-e', code], { encoding: 'utf8' });
    const { took, rss, heapTotal } = JSON.parse(out) as Record<string, number>;
    const mb = (bytes = 0) => `${(bytes / 1024 / 1024).toFixed(0)} MiB`;
    console.log(`| ${name} | ${run} | ${took?.toFixed(0)} ms | ${mb(heapTotal)} | ${mb(rss)} |`);
  }
}
console.log(`\nuptime at end: ${load()}`);
