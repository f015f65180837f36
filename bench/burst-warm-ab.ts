/**
 * Bursts of new users on two warm servers of this checkout, the second one's chats resumable
 * (`"resumable": true`, issue 32), in alternating bursts (ABBA), reading each server's CPU and
 * V8's own collection time (`nodejs_gc_duration_seconds` from `/metrics`) around every burst.
 *
 * Why, besides `burst.ts`: that one starts a fresh server per row (the burst a new deployment
 * meets), so each row also pays its process's warm-up; here both servers are started once and
 * warmed, so the difference is what opting in costs a chat at that concurrency, and the GC
 * column says whether keeping a run's events in memory until they are stored costs the
 * collector. The worker-thread column is the embedded engine's PGlite thread (its statements).
 *
 *   node bench/burst-warm-ab.ts [users=500] [bursts=6] [engine=embedded|server] [tokens=100] [paceMs=50]
 */
import { createTestDatabase } from '../test/support/postgres-server.ts';
import { startFakeLlm } from './support/fake-llm.ts';
import { load, machineReport } from './support/machine.ts';
import { startServer } from './support/parley.ts';
import { cpuMsOf, workerThreadsCpuMs } from './support/proc.ts';
import { chat, succeeded } from './support/sse-client.ts';
import { sleep } from './support/stats.ts';

const USERS = Number(process.argv[2] ?? 500);
const BURSTS = Number(process.argv[3] ?? 6);
const ENGINE = process.argv[4] ?? 'embedded';
const TOKENS = Number(process.argv[5] ?? 100);
const PACE_MS = Number(process.argv[6] ?? 50);
/** A resumable run's last batch is stored up to a second after its client saw the end. */
const SETTLE_MS = 1_500;

const fake = await startFakeLlm({ tokens: TOKENS, delayMs: PACE_MS });
const sides = await Promise.all(
  [false, true].map(async (resumable) => {
    const database = ENGINE === 'server' ? await createTestDatabase() : undefined;
    const server = await startServer({
      env: { LLM_BASE_URL: fake.url, DATABASE_URL: database?.url, METRICS_ENABLED: 'true' },
    });
    return { name: resumable ? 'resumable' : 'plain', resumable, server, database };
  }),
);

async function gcSeconds(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  let sum = 0;
  for (const match of text.matchAll(/^nodejs_gc_duration_seconds_sum\{[^}]*\} (\S+)$/gm)) {
    sum += Number(match[1]);
  }
  return sum;
}

let user = 0;
/** One burst of new users on a side: its CPU and GC per chat, in ms. */
async function burst(
  side: (typeof sides)[number],
): Promise<{ cpu: number; worker: number; gc: number }> {
  const { server, resumable } = side;
  const gcBefore = await gcSeconds(server.url);
  const cpuBefore = cpuMsOf(server.pid);
  const workerBefore = workerThreadsCpuMs(server.pid);
  const results = await Promise.all(
    Array.from({ length: USERS }, () =>
      chat(server.url, `warm-${user++}`, 'Hello there', { resumable }),
    ),
  );
  const failed = results.filter((result) => !succeeded(result)).length;
  if (failed > 0) throw new Error(`${failed} of ${USERS} chats failed on the ${side.name} side`);
  await sleep(SETTLE_MS);
  return {
    cpu: (cpuMsOf(server.pid) - cpuBefore) / USERS,
    worker: (workerThreadsCpuMs(server.pid) - workerBefore) / USERS,
    gc: ((await gcSeconds(server.url)) - gcBefore) * (1000 / USERS),
  };
}

// Warm both: one small burst each, not counted.
for (const side of sides) {
  await Promise.all(
    Array.from({ length: 20 }, () =>
      chat(side.server.url, `warm-${user++}`, 'Hello', { resumable: side.resumable }),
    ),
  );
}
const rows: string[] = [];
const totals = new Map<string, { cpu: number[]; worker: number[]; gc: number[] }>();
for (let round = 0; round < BURSTS; round++) {
  // ABBA: plain first in even rounds, resumable first in odd ones.
  for (const side of round % 2 === 0 ? sides : [...sides].reverse()) {
    const figures = await burst(side);
    const total = totals.get(side.name) ?? { cpu: [], worker: [], gc: [] };
    total.cpu.push(figures.cpu);
    total.worker.push(figures.worker);
    total.gc.push(figures.gc);
    totals.set(side.name, total);
    rows.push(
      `| ${round + 1} | ${side.name} | ${figures.cpu.toFixed(2)} ms | ${figures.worker.toFixed(2)} ms | ${figures.gc.toFixed(3)} ms | ${load()} |`,
    );
  }
}
const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;
type Totals = { cpu: number[]; worker: number[]; gc: number[] };
const plain = totals.get('plain') as Totals;
const resumable = totals.get('resumable') as Totals;
const pairs = plain.cpu.map((cpu, i) => ((resumable.cpu[i] as number) / cpu - 1) * 100);
console.log(
  [
    `## Warm bursts, plain against resumable (${ENGINE} engine)`,
    '',
    '```',
    machineReport(),
    `command: node bench/burst-warm-ab.ts ${process.argv.slice(2).join(' ')}`,
    '```',
    '',
    `${BURSTS} bursts a side of ${USERS} new users at once (${TOKENS} tokens every ${PACE_MS} ms), alternating; CPU and GC read ${SETTLE_MS} ms after a burst's last chat ended.`,
    '',
    '| burst | side | server CPU per chat | of it, worker threads (PGlite) | GC per chat | load |',
    '| --- | --- | ---: | ---: | ---: | --- |',
    ...rows,
    '',
    `mean CPU per chat: plain ${mean(plain.cpu).toFixed(2)} ms, resumable ${mean(resumable.cpu).toFixed(2)} ms (${((mean(resumable.cpu) / mean(plain.cpu) - 1) * 100).toFixed(1)} %); worker threads ${mean(plain.worker).toFixed(2)} / ${mean(resumable.worker).toFixed(2)} ms; GC per chat ${mean(plain.gc).toFixed(3)} / ${mean(resumable.gc).toFixed(3)} ms`,
    `per burst pair, resumable against plain: ${pairs.map((p) => `${p >= 0 ? '+' : ''}${p.toFixed(1)} %`).join(', ')}`,
  ].join('\n'),
);
for (const side of sides) {
  await side.server.stop();
  await side.database?.drop();
}
await fake.close();
process.exit(0);
