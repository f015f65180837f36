/**
 * Memory of a live backup of the embedded engine (`GET /admin/backup`) at a database of a few
 * hundred MB, as an operator's process meets it: the server's VmRSS sampled every 20 ms before
 * and during the download and its VmHWM after, with the time to the first byte and to the last,
 * the archive's size, what the server logged of the backup (`pausedMs`: how long it held the
 * database, where it says), and the slowest `/health` (one query) answered during the backup,
 * the database's pause as a client sees it (a ping gives up after 2 s and answers 503).
 *
 *   node bench/backup-memory.ts [targetMb=400] [baselineDir]
 *
 * The data directory is filled once, with bulk SQL through PGlite on a table of its own (rows of
 * md5 hex, which compress about as text does), then backed up by each checkout in turn on the
 * same files: a baseline checkout first if given (e.g. `git worktree add /work/wt-old main` with
 * `node_modules` linked), then this one. One run each: memory, unlike CPU, barely drifts.
 */
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { PGlite } from '@electric-sql/pglite';
import { pgliteOptions } from '../src/storage/pglite-options.ts';
import { startFakeLlm } from './support/fake-llm.ts';
import { machineReport } from './support/machine.ts';
import { startServer } from './support/parley.ts';
import { memoryOf } from './support/proc.ts';
import { sleep } from './support/stats.ts';

const TARGET_MB = Number(process.argv[2] ?? 400);
const BASELINE = process.argv[3];
const TOKEN = 'bench-backup-token';
const MB = 1024 * 1024;
const ROWS_PER_BATCH = 50_000;

const sizeOf = (path: string): number => {
  const info = statSync(path);
  if (!info.isDirectory()) return info.size;
  let total = 0;
  for (const name of readdirSync(path)) total += sizeOf(join(path, name));
  return total;
};

const fake = await startFakeLlm({ tokens: 5, delayMs: 0 });
const dataDir = mkdtempSync(join(tmpdir(), 'parley-bench-backup-'));
const env = { API_TOKEN: TOKEN, LLM_BASE_URL: fake.url, LOG_LEVEL: 'info' };

// A data directory as Parley makes it (seed and migrations), then filled while no server runs.
await (await startServer({ dataDir, env })).stop();
const fillStarted = performance.now();
const db = await PGlite.create(join(dataDir, 'pg'), pgliteOptions('16MB'));
await db.exec('CREATE TABLE bench_filler (id bigint PRIMARY KEY, body text NOT NULL)');
for (let from = 1; sizeOf(join(dataDir, 'pg')) < TARGET_MB * MB; from += ROWS_PER_BATCH) {
  await db.query(
    `INSERT INTO bench_filler
       SELECT g, (SELECT string_agg(md5(g::text || ':' || i), '') FROM generate_series(1, 16) i)
         FROM generate_series($1::bigint, $2::bigint) g`,
    [from, from + ROWS_PER_BATCH - 1],
  );
  // Recycles the write-ahead log as a long-running database's is, so the size is the data's.
  await db.exec('CHECKPOINT');
  process.stderr.write(`filled ${(sizeOf(join(dataDir, 'pg')) / MB).toFixed(0)} MB\r`);
}
await db.close();
const dataBytes = sizeOf(join(dataDir, 'pg'));
const fillSeconds = (performance.now() - fillStarted) / 1000;

interface Row {
  side: string;
  rssBefore: number;
  hwmBefore: number;
  rssPeak: number;
  hwmAfter: number;
  firstByteMs: number;
  totalMs: number;
  archiveBytes: number;
  slowestHealthMs: number;
  unhealthy: number;
  logged: string;
}

async function backUp(side: string, root: URL | undefined): Promise<Row> {
  let logged = '';
  const server = await startServer({
    dataDir,
    env,
    root,
    onLogLine: (text) => {
      if (text.includes('"msg":"backup taken"')) {
        const { pausedMs, ms, bytes } = JSON.parse(text) as Record<string, unknown>;
        logged = JSON.stringify({ pausedMs, ms, bytes });
      }
    },
  });
  try {
    await sleep(2_000); // start-up's own allocations settle
    const before = memoryOf(server.pid);
    let rssPeak = before.rss;
    const sampler = setInterval(() => {
      rssPeak = Math.max(rssPeak, memoryOf(server.pid).rss);
    }, 20);
    let backingUp = true;
    let slowestHealthMs = 0;
    let unhealthy = 0;
    const prober = (async () => {
      while (backingUp) {
        const started = performance.now();
        const response = await fetch(`${server.url}/health`);
        await response.arrayBuffer();
        if (response.status !== 200) unhealthy++;
        slowestHealthMs = Math.max(slowestHealthMs, performance.now() - started);
        await sleep(50);
      }
    })();

    const started = performance.now();
    const response = await fetch(`${server.url}/admin/backup`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    if (response.status !== 200) throw new Error(`${side}: backup answered ${response.status}`);
    let firstByteMs = 0;
    let archiveBytes = 0;
    for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
      if (archiveBytes === 0) firstByteMs = performance.now() - started;
      archiveBytes += chunk.length;
    }
    const totalMs = performance.now() - started;
    backingUp = false;
    await prober;
    clearInterval(sampler);
    const after = memoryOf(server.pid);
    return {
      side,
      rssBefore: before.rss,
      hwmBefore: before.hwm,
      rssPeak: Math.max(rssPeak, after.rss),
      hwmAfter: after.hwm,
      firstByteMs,
      totalMs,
      archiveBytes,
      slowestHealthMs,
      unhealthy,
      logged,
    };
  } finally {
    await server.stop();
  }
}

const rows: Row[] = [];
try {
  if (BASELINE) rows.push(await backUp('baseline', pathToFileURL(`${BASELINE}/`)));
  rows.push(await backUp('this checkout', undefined));
} finally {
  await fake.close();
  rmSync(dataDir, { recursive: true, force: true });
}

const mb = (bytes: number) => (bytes / MB).toFixed(0);
const s = (ms: number) => (ms / 1000).toFixed(1);
console.log(`## Backup memory at ${mb(dataBytes)} MB of data (\`bench/backup-memory.ts\`)

\`\`\`
${machineReport()}
baseline: ${BASELINE ?? 'none'}
filled in ${fillSeconds.toFixed(0)} s
\`\`\`

| checkout | RSS before (MB) | HWM before | RSS peak during | HWM after | HWM growth | first byte (s) | whole (s) | archive (MB) | slowest /health (ms) | /health 503s | server logged |
| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |
${rows
  .map(
    (row) =>
      `| ${row.side} | ${mb(row.rssBefore)} | ${mb(row.hwmBefore)} | ${mb(row.rssPeak)} | ${mb(row.hwmAfter)} | ${mb(row.hwmAfter - row.hwmBefore)} | ${s(row.firstByteMs)} | ${s(row.totalMs)} | ${mb(row.archiveBytes)} | ${row.slowestHealthMs.toFixed(0)} | ${row.unhealthy} | \`${row.logged}\` |`,
  )
  .join('\n')}`);
