/**
 * Job engines on both database engines (issue 25): Parley's own lease loop (the feedback
 * outbox's `FOR UPDATE SKIP LOCKED` claim), pg-boss and graphile-worker, each on the embedded
 * engine (PGlite served over the wire protocol by Parley's own engine thread and session
 * server, through a pool of Parley's size: 1) and on the PostgreSQL server at 127.0.0.1:5432
 * (a throw-away database, pool 10 as Parley's DB_POOL_MAX).
 *
 *   node bench/job-engines.ts [jobs=500] [pickups=30] [killWaitDefaultS=30] [killWaitConfiguredS=60]
 *
 * The libraries are installed at exact versions into a scratch prefix under the temp
 * directory (kept between runs), not into package.json. Each library × engine runs in a
 * process of its own (bench/support/job-engine-case.ts, with the node flags and environment
 * of `npm start`) and reports:
 * - start: time to import it, and to install its schema and queue (timeout 30 s, with the
 *   error when it does not start); RSS it adds (process.memoryUsage after a GC, before the
 *   import and after the start, then after the jobs; the embedded engine is warmed up first,
 *   and its PGlite thread counts, as it does in Parley);
 *   schema objects it creates (tables, indexes, functions);
 * - enqueue rate: `jobs` jobs one at a time, no worker running;
 * - CPU per job: process CPU from the first enqueue until a no-op handler has seen the last
 *   job (on the server engine the PostgreSQL server's own CPU is not counted; on the embedded
 *   engine PGlite's is, since it runs in the process);
 * - idle pickup: `pickups` jobs one at a time into an idle worker, enqueue to handler;
 * - idle CPU: process CPU over 10 s with the worker idle (polling, maintenance);
 * - killed worker: a second process takes a job and is SIGKILLed mid-job; seconds until a
 *   worker here runs it again, with the library's defaults (waited for at most
 *   killWaitDefaultS) and with its shortest sensible configured recovery.
 * Prints a Markdown report and writes it to bench/results/job-engines-<commit>[-$RESULTS_SUFFIX].md.
 * JOB_ENGINES=embedded|server and JOB_VARIANTS=0,1 (indexes into VARIANTS) pick rows; a
 * killed-worker wait long enough for the defaults (pg-boss: 15-min expiry) is e.g.
 *   JOB_ENGINES=server JOB_VARIANTS=0,1 RESULTS_SUFFIX=defaults node bench/job-engines.ts 200 10 1200
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import type { CaseInput, CaseResult, KillResult } from './support/job-engine-case.ts';
import { type Libraries, VARIANTS } from './support/job-engine-variants.ts';
import { load, machineReport } from './support/machine.ts';
import { installScratch } from './support/scratch-install.ts';
import { mib } from './support/stats.ts';

const [jobs = 500, pickups = 30, killWaitDefault = 30, killWaitConfigured = 60] = process.argv
  .slice(2)
  .map(Number);
const ENGINES = (process.env.JOB_ENGINES ?? 'embedded,server').split(',') as (
  | 'embedded'
  | 'server'
)[];
/** Comma-separated variant indexes (see VARIANTS) to run only some rows. */
const ONLY = process.env.JOB_VARIANTS?.split(',').map(Number);

/** Latest stable versions when this was written (`npm view <pkg> version`). */
const PG_BOSS_VERSION = '12.38.0';
const GRAPHILE_WORKER_VERSION = '0.18.0';

const libs: Libraries = {
  pgBoss: installScratch('pg-boss', PG_BOSS_VERSION),
  graphileWorker: installScratch('graphile-worker', GRAPHILE_WORKER_VERSION),
};

/**
 * The environment and node flags of package.json's `npm start` line (`--liftoff-only` and the
 * heap settings change PGlite's memory a lot), so each case's process runs as Parley does.
 */
function startLine(): { env: Record<string, string>; flags: string[] } {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
    scripts: { start: string };
  };
  const words = pkg.scripts.start.trim().split(/\s+/);
  const env: Record<string, string> = {};
  while (words[0]?.includes('=')) {
    const [name, ...value] = (words.shift() as string).split('=');
    env[name as string] = value.join('=');
  }
  if (words.shift() !== 'node') throw new Error(`unexpected start script: ${pkg.scripts.start}`);
  return { env, flags: words.filter((word) => word.startsWith('--')) };
}
const START = startLine();

function runCase(input: CaseInput): Promise<CaseResult> {
  const child = spawn(
    process.execPath,
    [
      ...START.flags,
      '--expose-gc',
      new URL('./support/job-engine-case.ts', import.meta.url).pathname,
      JSON.stringify(input),
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...START.env } },
  );
  const stderr: string[] = [];
  child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk.toString()));
  return new Promise((resolve) => {
    let result: CaseResult | undefined;
    createInterface({ input: child.stdout }).on('line', (line) => {
      if (line.startsWith('RESULT ')) result = JSON.parse(line.slice(7)) as CaseResult;
    });
    child.on('close', (code) => {
      const variant = VARIANTS[input.variant]?.name ?? '?';
      // Each distinct line once, links left out (they name other sites).
      const lines = new Set(
        stderr
          .join('')
          .replace(/https?:\/\/\S+/g, '<link>')
          .split('\n')
          .map((line) => line.trim())
          .filter(Boolean),
      );
      const log = [...lines].slice(-6).join(' | ');
      resolve(
        result ?? {
          variant,
          engine: input.engine,
          enqueued: 0,
          drained: 0,
          pickupsMissed: 0,
          kill: {},
          errors: [`case process exited ${code} without a result: ${log}`],
        },
      );
      if (result && log) result.errors.push(`stderr: ${log.slice(0, 600)}`);
    });
  });
}

const fixed = (value: number | undefined, digits = 0) =>
  value === undefined || !Number.isFinite(value)
    ? '–'
    : value.toLocaleString('en-US', {
        maximumFractionDigits: digits,
        minimumFractionDigits: digits,
      });

const killCell = (kill: KillResult | undefined) =>
  !kill ? 'n/a' : kill.seconds !== undefined ? `${fixed(kill.seconds, 1)} s` : kill.note;

function row(r: CaseResult): string {
  const started = r.startMs !== undefined;
  return [
    r.variant,
    r.engine,
    started ? `${fixed(r.importMs)} + ${fixed(r.startMs)} ms` : 'did not start',
    r.rssAddedBytes !== undefined
      ? `${mib(r.rssAddedBytes)} / ${r.rssAfterJobsBytes !== undefined ? mib(r.rssAfterJobsBytes) : '–'} MiB`
      : '–',
    r.objects ? `${r.objects.tables} / ${r.objects.indexes} / ${r.objects.functions}` : '–',
    r.enqueuePerSecond !== undefined ? fixed(r.enqueuePerSecond) : `${r.enqueued} of ${jobs}`,
    r.workerStartMs !== undefined ? `${fixed(r.workerStartMs)} ms` : '–',
    r.drainMs !== undefined ? `${fixed(r.drainMs / 1000, 2)} s` : `${r.drained} of ${jobs} ran`,
    fixed(r.cpuMicrosPerJob),
    r.pickup
      ? `${fixed(r.pickup.p50, 1)} / ${fixed(r.pickup.p99, 1)}${r.pickupsMissed ? ` (${r.pickupsMissed} missed)` : ''}`
      : r.drainMs !== undefined
        ? `${r.pickupsMissed} missed`
        : '–',
    fixed(r.idleCpuMsPerSecond, 1),
    killCell(r.kill.default),
    killCell(r.kill.configured),
  ]
    .join(' | ')
    .replace(/^/, '| ')
    .concat(' |');
}

const out: string[] = [];
const say = (line = '') => {
  out.push(line);
  console.log(line);
};

say(`## Job engines on both engines (issue 25)`);
say();
say('```');
say(machineReport());
say('```');
say();
say(
  `\`node bench/job-engines.ts ${jobs} ${pickups} ${killWaitDefault} ${killWaitConfigured}\` — pg-boss ${PG_BOSS_VERSION} (${libs.pgBoss.packages} packages, ${mib(libs.pgBoss.bytes)} MiB), graphile-worker ${GRAPHILE_WORKER_VERSION} (${libs.graphileWorker.packages} packages, ${mib(libs.graphileWorker.bytes)} MiB)`,
);
say();

const results: CaseResult[] = [];
for (const [index] of VARIANTS.entries()) {
  if (ONLY && !ONLY.includes(index)) continue;
  for (const engine of ENGINES) {
    console.error(`# ${VARIANTS[index]?.name} on ${engine} (${load()})`);
    results.push(
      await runCase({
        variant: index,
        engine,
        libs,
        jobs,
        pickups,
        killWaitDefault,
        killWaitConfigured,
      }),
    );
  }
}

say(
  '| job engine | database | start: import + schema/queue | RSS added: started / after the jobs | tables / indexes / functions | enqueue jobs/s | worker start | run all jobs | CPU µs/job | idle pickup p50 / p99 ms | idle CPU ms/s | killed worker, defaults | killed worker, configured |',
);
say('| --- | --- | --- | ---: | --- | ---: | ---: | ---: | ---: | --- | ---: | --- | --- |');
for (const result of results) say(row(result));
say();
say('Settings:');
for (const [index, variant] of VARIANTS.entries()) {
  if (ONLY && !ONLY.includes(index)) continue;
  say(
    `- ${variant.name}: ${variant.settings.default}; killed-worker "configured": ${variant.settings.configured}`,
  );
}
say();
say('Errors and notes:');
for (const result of results) {
  for (const error of result.errors) say(`- ${result.variant}, ${result.engine}: ${error}`);
}
say();
say(`load at the end: ${load()}`);

mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
const commit = /commit: (\S+)/.exec(out.join('\n'))?.[1] ?? 'unknown';
// RESULTS_SUFFIX names a second run of the same commit (e.g. a long killed-worker wait).
const suffix = process.env.RESULTS_SUFFIX ? `-${process.env.RESULTS_SUFFIX}` : '';
const file = new URL(`./results/job-engines-${commit}${suffix}.md`, import.meta.url);
writeFileSync(file, `${out.join('\n')}\n`);
console.error(`written to ${file.pathname}`);
