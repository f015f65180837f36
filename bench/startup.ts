/**
 * Start-up time: from spawning the `npm start` line (`node src/start.ts`) to the "Parley is
 * listening" log line and to the first 200 from /health, for a fresh embedded data directory
 * (made from the shipped seed), the same directory again, the same again with a model server
 * configured (`LLM_BASE_URL`: the embedded model's code is then never loaded; nothing listens
 * there, and nothing asks it at start), and a fresh database on the local PostgreSQL server.
 *
 *   node bench/startup.ts [runs=5]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase } from '../test/support/postgres-server.ts';
import { load, machineReport } from './support/machine.ts';
import { type BenchServer, startServer } from './support/parley.ts';
import { memoryOf } from './support/proc.ts';
import { mib, ms, summarize } from './support/stats.ts';

const RUNS = Number(process.argv[2] ?? 5);
const env = { LOG_LEVEL: 'info' };

interface Timing {
  listening: number;
  healthy: number;
  /** What the server itself logs: from the start of main() (after module loading) to listening. */
  inMain: number;
  /** VmRSS and VmHWM of the server right after its first 200 from /health. */
  rss: number;
  hwm: number;
  /** VmRSS and VmHWM after a further SETTLE_MS idle: work that start-up leaves running counts. */
  settledRss: number;
  settledHwm: number;
}

/**
 * The idle wait before the second reading. V8 compiles hot WebAssembly functions with its
 * optimising compiler in the background after start-up, which on PGlite's largest function
 * takes ~600 MB for ~0.4 s: a reading at the first 200 alone missed that peak.
 */
const SETTLE_MS = Number(process.env.SETTLE_MS ?? 5_000);

async function once(start: () => Promise<BenchServer>): Promise<Timing> {
  const server = await start();
  const { rss, hwm } = memoryOf(server.pid);
  await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
  const settled = memoryOf(server.pid);
  if (settled.rss === 0) throw new Error('the server exited while idle');
  await server.stop();
  if (server.listeningAt === undefined) throw new Error('no "Parley is listening" line');
  return {
    listening: server.listeningAt - server.spawnedAt,
    healthy: server.healthyAt - server.spawnedAt,
    inMain: Number(server.listening?.startupMs),
    rss,
    hwm,
    settledRss: settled.rss,
    settledHwm: settled.hwm,
  };
}

console.log(`## startup (${RUNS} runs each)\n`);
console.log('```');
console.log(machineReport());
console.log('```\n');

const fresh: Timing[] = [];
const warm: Timing[] = [];
const modelServer: Timing[] = [];
const postgres: Timing[] = [];
const dirs: string[] = [];
for (let i = 0; i < RUNS; i++) {
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-bench-startup-'));
  dirs.push(dataDir);
  fresh.push(await once(() => startServer({ env, dataDir })));
}
const warmDir = dirs[0] as string;
for (let i = 0; i < RUNS; i++) warm.push(await once(() => startServer({ env, dataDir: warmDir })));
const withModelServer = { ...env, LLM_BASE_URL: 'http://127.0.0.1:9/v1' };
for (let i = 0; i < RUNS; i++) {
  modelServer.push(await once(() => startServer({ env: withModelServer, dataDir: warmDir })));
}
for (let i = 0; i < RUNS; i++) {
  const database = await createTestDatabase();
  try {
    postgres.push(await once(() => startServer({ env: { ...env, DATABASE_URL: database.url } })));
  } finally {
    await database.drop();
  }
}
for (const dir of dirs) rmSync(dir, { recursive: true, force: true });

const row = (name: string, timings: Timing[]) => {
  const listening = summarize(timings.map((t) => t.listening));
  const healthy = summarize(timings.map((t) => t.healthy));
  const inMain = summarize(timings.map((t) => t.inMain));
  const rss = summarize(timings.map((t) => t.rss));
  const hwm = summarize(timings.map((t) => t.hwm));
  const settledRss = summarize(timings.map((t) => t.settledRss));
  const settledHwm = summarize(timings.map((t) => t.settledHwm));
  return `| ${name} | ${ms(listening.p50)} | ${ms(listening.max)} | ${ms(healthy.p50)} | ${ms(healthy.max)} | ${ms(inMain.p50)} | ${mib(rss.p50)} | ${mib(hwm.p50)} | ${mib(settledRss.p50)} | ${mib(settledHwm.p50)} / ${mib(settledHwm.max)} |`;
};

console.log(
  `| case | listening p50 | listening max | /health 200 p50 | /health 200 max | startupMs logged p50 | VmRSS then p50 (MiB) | VmHWM then p50 (MiB) | VmRSS ${SETTLE_MS / 1000} s later p50 | VmHWM ${SETTLE_MS / 1000} s later p50 / max |`,
);
console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
console.log(row('embedded, fresh data dir (seed)', fresh));
console.log(row('embedded, same data dir again', warm));
console.log(row('embedded, same data dir, LLM_BASE_URL set', modelServer));
console.log(row('DATABASE_URL, fresh database', postgres));
console.log('\nall runs (ms, listening/healthy):');
for (const [name, list] of [
  ['fresh', fresh],
  ['warm', warm],
  ['model server', modelServer],
  ['postgres', postgres],
] as const) {
  console.log(`- ${name}: ${list.map((t) => `${ms(t.listening)}/${ms(t.healthy)}`).join(', ')}`);
}
console.log(`\nuptime at end: ${load()}`);
