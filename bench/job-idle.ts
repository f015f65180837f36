/**
 * What the job engine costs a process with nothing to do: CPU per second (this process, which
 * on the embedded engine includes PGlite's thread) and queries per second, with all four kinds
 * of background work added and idle, as `npm start` would run them; and the same with pg-boss
 * settings Parley changed put back, one row each.
 *
 *   node bench/job-idle.ts [engine=embedded|server] [seconds=30]
 */
import pino from 'pino';
import { createJobEngine } from '../src/background/job-engine.ts';
import type { JobKindDefinition } from '../src/background/job-kind.ts';
import { JobRunner } from '../src/background/job-runner.ts';
import { POLLING_SECONDS } from '../src/background/kind-queue.ts';
import type { JobKind } from '../src/metrics/metrics.ts';
import { openTestDatabase } from '../test/support/engines.ts';
import { load, machineReport } from './support/machine.ts';

const engine = (process.argv[2] ?? 'embedded') as 'embedded' | 'server';
const SECONDS = Number(process.argv[3] ?? 30);
const LEASE_SECONDS = 120; // the memory decisions' and notices' default

/** A kind with nothing to do, and the interval (or none) the real one has. */
const idleKind = (kind: JobKind, intervalMs?: number): JobKindDefinition<{ attempts: number }> => ({
  kind,
  policy: {
    leaseSeconds: LEASE_SECONDS,
    budgetMs: 60_000,
    batch: 500,
    concurrency: 1,
    backoffMs: 5_000,
    maxBackoffMs: 60_000,
    maxAttempts: Number.POSITIVE_INFINITY,
    ...(intervalMs === undefined ? {} : { intervalMs }),
  },
  source: {
    pending: async () => [],
    claim: async () => undefined,
    complete: async () => {},
    retried: async () => {},
    bury: async () => {},
  },
  run: async () => {},
  classify: () => ({ errorKind: 'none', retry: 'backoff' }),
});

const variants: { name: string; overrides: Record<string, unknown>; pollingSeconds?: number }[] = [
  { name: "Parley's settings", overrides: {} },
  { name: 'workers poll every 2 s', overrides: {}, pollingSeconds: 2 },
  { name: 'instance registry on (its default)', overrides: { registerInstance: true } },
  { name: 'flow pass every 5 s (its default)', overrides: { flowIntervalSeconds: 5 } },
  {
    name: 'supervision every 24 s (a fifth of the lease)',
    overrides: { superviseIntervalSeconds: 24, monitorIntervalSeconds: 24 },
  },
  {
    name: 'all four of the above',
    overrides: {
      registerInstance: true,
      flowIntervalSeconds: 5,
      superviseIntervalSeconds: 24,
      monitorIntervalSeconds: 24,
    },
    pollingSeconds: 2,
  },
];

console.log(`## job-idle (${engine} engine, ${SECONDS} s a row)\n`);
console.log(`\`\`\`\n${machineReport()}\n\`\`\`\n`);
console.log(`command: \`node bench/job-idle.ts ${engine} ${SECONDS}\`\n`);
console.log('| settings | idle CPU ms/s | queries/s | load after |');
console.log('| --- | ---: | ---: | --- |');
for (const variant of variants) {
  const opened = await openTestDatabase(engine);
  const pool = opened.database.db.$client;
  let queries = 0;
  const query = pool.query.bind(pool) as (...args: unknown[]) => unknown;
  (pool as unknown as { query: unknown }).query = (...args: unknown[]) => {
    queries++;
    return query(...args);
  };
  const logger = pino({ level: 'silent' });
  const boss = createJobEngine(pool, logger, {
    leaseSeconds: LEASE_SECONDS,
    overrides: variant.overrides,
  });
  const runner = new JobRunner(boss, logger, undefined, {
    pollingSeconds: variant.pollingSeconds ?? POLLING_SECONDS,
  });
  runner.add(idleKind('feedback_forward', 30_000));
  runner.add(idleKind('memory_decision', 30_000));
  runner.add(idleKind('embedding_batch'));
  runner.add(idleKind('reminder_notice', 60_000));
  await runner.start();
  await new Promise((resolve) => setTimeout(resolve, 5_000)); // start-up's work settles
  const cpu = process.cpuUsage();
  const before = queries;
  await new Promise((resolve) => setTimeout(resolve, SECONDS * 1000));
  const used = process.cpuUsage(cpu);
  const cpuMs = (used.user + used.system) / 1000 / SECONDS;
  console.log(
    `| ${variant.name} | ${cpuMs.toFixed(1)} | ${((queries - before) / SECONDS).toFixed(2)} | ${load()} |`,
  );
  await runner.stop();
  await opened.close();
}
