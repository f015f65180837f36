/**
 * Resident memory of the server after many distinct users have each chatted once (a 3-token
 * answer, no delay), at most `concurrency` chats in flight. Embedded engine by default.
 * Progress is printed every 30 s: the full run takes long, start it with nohup.
 *
 *   node bench/memory-users.ts [users=100000] [concurrency=50] [engine=embedded|server]
 */
import { execSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createTestDatabase } from '../test/support/postgres-server.ts';
import { startFakeLlm } from './support/fake-llm.ts';
import { load, machineReport } from './support/machine.ts';
import { startServer } from './support/parley.ts';
import { memoryOf, sampleRss } from './support/proc.ts';
import { chat, succeeded } from './support/sse-client.ts';
import { mib, ms, sleep } from './support/stats.ts';

const USERS = Number(process.argv[2] ?? 100_000);
const CONCURRENCY = Number(process.argv[3] ?? 50);
const ENGINE = process.argv[4] ?? 'embedded';
const QUIET_MS = Number(process.env.QUIET_MS ?? 60_000);
const TARGET_MIB = 400;

console.log(`## memory-users (${ENGINE} engine, ${USERS} users, ${CONCURRENCY} in flight)\n`);
console.log(`\`\`\`\n${machineReport()}\n\`\`\`\n`);

const fake = await startFakeLlm({ tokens: 3, delayMs: 0 });
const database = ENGINE === 'server' ? await createTestDatabase() : undefined;
const server = await startServer({ env: { LLM_BASE_URL: fake.url, DATABASE_URL: database?.url } });
const atStart = memoryOf(server.pid);
const memoryLine = () => {
  const { rss, hwm } = memoryOf(server.pid);
  return `VmRSS ${mib(rss)} MiB, VmHWM ${mib(hwm)} MiB`;
};
console.log(`after start-up: ${memoryLine()}`);

const rss = sampleRss(server.pid, 100);
const startedAt = performance.now();
const errors = new Map<string, number>();
let next = 0;
let done = 0;
let failed = 0;
const progress = setInterval(() => {
  const seconds = (performance.now() - startedAt) / 1000;
  console.log(
    `${seconds.toFixed(0)} s: ${done} chats (${(done / seconds).toFixed(0)}/s), ${failed} failed, ${memoryLine()}; ${load()}`,
  );
}, 30_000);
await Promise.all(
  Array.from({ length: CONCURRENCY }, async () => {
    while (next < USERS) {
      const result = await chat(server.url, `user-${next++}`);
      done++;
      if (!succeeded(result)) {
        failed++;
        const key = result.error ?? 'incomplete stream';
        errors.set(key, (errors.get(key) ?? 0) + 1);
      }
    }
  }),
);
clearInterval(progress);
const took = performance.now() - startedAt;
const afterRun = memoryOf(server.pid);
console.log(
  `\nall ${done} chats in ${ms(took / 1000)} s (${(done / (took / 1000)).toFixed(0)} chats/s)`,
);
for (let waited = 0; waited < QUIET_MS; waited += 10_000) {
  await sleep(10_000);
  console.log(`quiet +${(waited + 10_000) / 1000} s: ${memoryLine()}`);
}
const afterQuiet = memoryOf(server.pid);
const { peak } = rss.stop();
await server.stop({ keep: true });
const dataDirBytes = Number(
  execSync(`du -sb ${server.dataDir}`, { encoding: 'utf8' }).split('\t')[0],
);
rmSync(server.dataDir, { recursive: true, force: true });
await fake.close();
await database?.drop();

// memoryOf reads 0 once the process is gone: that is no figure, and certainly no pass.
const verdict = (bytes: number) =>
  bytes === 0
    ? 'no figure: the server was not running'
    : bytes / 1024 / 1024 <= TARGET_MIB
      ? 'PASS'
      : `FAIL (+${mib(bytes - TARGET_MIB * 1024 * 1024)} MiB)`;
if (failed > 0) console.log(`\n**Not a valid run: ${failed} chats failed.**`);
console.log('\n| measure | value |');
console.log('| --- | --- |');
console.log(`| chats | ${done}, failed ${failed} |`);
console.log(`| time | ${ms(took / 1000)} s (${(done / (took / 1000)).toFixed(0)} chats/s) |`);
console.log(`| VmRSS / VmHWM after start-up | ${mib(atStart.rss)} / ${mib(atStart.hwm)} MiB |`);
console.log(
  `| VmRSS after the run (target ≤ ${TARGET_MIB} MiB) | ${mib(afterRun.rss)} MiB: ${verdict(afterRun.rss)} |`,
);
console.log(`| VmHWM after the run | ${mib(afterRun.hwm)} MiB: ${verdict(afterRun.hwm)} |`);
console.log(
  `| VmRSS after ${QUIET_MS / 1000} s quiet | ${mib(afterQuiet.rss)} MiB: ${verdict(afterQuiet.rss)} |`,
);
console.log(`| VmHWM after ${QUIET_MS / 1000} s quiet | ${mib(afterQuiet.hwm)} MiB |`);
console.log(`| peak VmRSS sampled every 100 ms | ${mib(peak)} MiB |`);
if (ENGINE === 'embedded')
  console.log(`| data directory after (du -sb) | ${mib(dataDirBytes)} MiB |`);
if (errors.size) {
  console.log('\nerrors:');
  for (const [error, count] of errors) console.log(`- ${count} × ${error}`);
}
console.log(`\nuptime at end: ${load()}`);
