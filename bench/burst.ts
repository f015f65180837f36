/**
 * A burst of new users: N users who never chatted before each post one chat at the same
 * instant (a class or a team opening the assistant at 9:00). Four rows from one run, one
 * after the other on the same fake model (its own process, paced tokens):
 *
 *   direct     the fake model's stream read directly: the limit of this machine and client
 *   reference  ../shared/bench/fastapi_relay.py (FastAPI relay, history in memory, no database)
 *   embedded   Parley as `npm start` runs it, embedded engine
 *   server     Parley on the local PostgreSQL server
 *   server-workers2  the same with PARLEY_WORKERS=2 (two processes on one port, node:cluster)
 *
 * Every figure is also given as a ratio to the direct row of the same run, since absolute
 * times on a shared 2-core machine move from run to run.
 *
 *   node bench/burst.ts [users=1000] [tokens=100] [paceMs=50] [rows=direct,reference,embedded,server]
 *
 * (rows may also name server-workers2). `embedded-resumable` and `server-resumable` are the same
 * servers with every chat opting in to resumable answers (`"resumable": true`, issue 32). Parley
 * rows run in the order given and may repeat, so plain and resumable can alternate:
 * `direct,embedded,embedded-resumable,embedded,embedded-resumable`. A resumable row whose chats
 * come back without SSE ids (or a plain one with them) fails the run. Server rows also show the
 * CPU of the PostgreSQL backends of their database, which the server's process does not include.
 * Parley rows show which part of their CPU the worker threads used (the embedded engine's
 * PGlite thread: its statements), from the thread's own counters (the primary's threads only,
 * with server-workers2). Throughput is completed chats per second of wall time:
 * with paceMs=0 the model answers at full speed and the server's CPU is the limit.
 *
 * The reference relay needs Debian's python3-fastapi, python3-uvicorn and python3-httpx.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createTestDatabase } from '../test/support/postgres-server.ts';
import { startFakeLlm } from './support/fake-llm.ts';
import { load, machineReport } from './support/machine.ts';
import { freePort, startServer } from './support/parley.ts';
import { cpuMsOfPostgres, cpuMsOfTree, databaseOf, workerThreadsCpuMs } from './support/proc.ts';
import {
  addFragment,
  type ChatResult,
  chat,
  gaps,
  postSse,
  startResult,
  succeeded,
} from './support/sse-client.ts';
import { ms, sleep, summarize } from './support/stats.ts';

const USERS = Number(process.argv[2] ?? 1_000);
const TOKENS = Number(process.argv[3] ?? 100);
const PACE_MS = Number(process.argv[4] ?? 50);
const ROWS = (process.argv[5] ?? 'direct,reference,embedded,server').split(',');
const RELAY_DIR = new URL('../../shared/bench/', import.meta.url).pathname;

interface Row {
  name: string;
  results: ChatResult[];
  wallMs: number;
  /** CPU the serving process used during the burst (none for the direct row). */
  cpuMs?: number;
  /** Of it, the worker threads' (the embedded engine's PGlite runs on one). */
  workerCpuMs?: number;
  /** CPU of the PostgreSQL backends of the row's database during the burst (server engine). */
  dbCpuMs?: number;
  /** Chats whose SSE ids did not match the row (ids on a plain row, none on a resumable one). */
  misframed?: number;
}

console.log(
  `## burst of new users (${USERS} users at once, ${TOKENS} tokens every ${PACE_MS} ms)\n`,
);
console.log(`\`\`\`\n${machineReport()}\n\`\`\`\n`);

const fake = await startFakeLlm({ tokens: TOKENS, delayMs: PACE_MS });
const rows: Row[] = [];
let run = 0;

/** All users at once; every one of them new to the target (ids never used before). */
async function burst(
  name: string,
  send: (userId: string) => Promise<ChatResult>,
  pid?: number,
  dbName?: string,
) {
  run += 1;
  const before = pid === undefined ? 0 : cpuMsOfTree(pid);
  const workersBefore = pid === undefined ? 0 : workerThreadsCpuMs(pid);
  const beforeDb = dbName === undefined ? 0 : cpuMsOfPostgres(dbName);
  const started = performance.now();
  const results = await Promise.all(
    Array.from({ length: USERS }, (_, i) => send(`burst-${run}-${i}`)),
  );
  const row: Row = { name, results, wallMs: performance.now() - started };
  // Work done after the clients saw the end (a resumable run's last batch) counts too.
  if (pid !== undefined) await sleep(500);
  if (pid !== undefined) row.cpuMs = cpuMsOfTree(pid) - before;
  if (pid !== undefined) row.workerCpuMs = workerThreadsCpuMs(pid) - workersBefore;
  if (dbName !== undefined) row.dbCpuMs = cpuMsOfPostgres(dbName) - beforeDb;
  rows.push(row);
  console.error(`${name}: done in ${ms(row.wallMs)} ms (${load()})`);
}

/** Warm-up: a few chats, so code paths are compiled before the burst, as on a running service. */
async function warm(send: (userId: string) => Promise<ChatResult>) {
  await Promise.all(Array.from({ length: 10 }, (_, i) => send(`warm-${run}-${i}`)));
  await fake.arrivals();
}

if (ROWS.includes('direct')) {
  const send = () => direct(fake.url);
  await warm(send);
  await burst('direct (fake model)', send);
}

if (ROWS.includes('reference')) {
  const relay = await startRelay(fake.url);
  const send = (userId: string) => chat(relay.url, userId);
  await warm(send);
  await burst('reference relay', send, relay.pid);
  relay.process.kill('SIGTERM');
  await once(relay.process, 'exit');
}

const parleyRows = [
  { row: 'embedded', name: 'Parley, embedded engine', server: false, workers: undefined },
  { row: 'server', name: 'Parley, server engine', server: true, workers: undefined },
  { row: 'server-workers2', name: 'Parley, server, 2 workers', server: true, workers: '2' },
];
// In the order asked, repeats included (plain and resumable rows alternating).
for (const asked of ROWS) {
  const resumable = asked.endsWith('-resumable');
  const found = parleyRows.find((r) => r.row === asked.replace(/-resumable$/, ''));
  if (!found) continue;
  const { server: onServer, workers } = found;
  const name = resumable ? `${found.name}, resumable` : found.name;
  const database = onServer ? await createTestDatabase() : undefined;
  const server = await startServer({
    env: { LLM_BASE_URL: fake.url, DATABASE_URL: database?.url, PARLEY_WORKERS: workers },
  });
  const send = (userId: string) => chat(server.url, userId, undefined, { resumable });
  // With workers, warm every one of them: connections are spread by the primary.
  await warm(send);
  if (workers) await warm(send);
  await burst(name, send, server.pid, database ? databaseOf(database.url) : undefined);
  await server.stop();
  await database?.drop();
  // The opt-in took effect (events numbered) or it did not (none): a chat otherwise is void.
  const last = rows.at(-1);
  if (last) {
    last.misframed = last.results.filter(
      (r) => succeeded(r) && (resumable ? r.numbered === 0 : r.numbered > 0),
    ).length;
  }
}
await fake.close();

const base = rows.find((row) => row.name.startsWith('direct'));
const ratio = (value: number, of: number | undefined) =>
  of ? ` (${(value / of).toFixed(1)}×)` : '';
const stats = rows.map((row) => {
  const ok = row.results.filter(succeeded);
  return {
    row,
    ok,
    first: summarize(ok.map((r) => (r.fragmentTimes[0] as number) - r.startedAt)),
    gap: summarize(ok.flatMap((r) => gapsBetweenFragments(r))),
    end: summarize(ok.map((r) => r.endedAt - (r.fragmentTimes.at(-1) as number))),
    complete: ok.filter((r) => r.tokenTimes.length === TOKENS).length,
  };
});
const direct0 = stats.find((s) => s.row === base);

console.log(
  '| | completed | wall | chats/s | first fragment p50 / p99 | gap between fragments p99 | last fragment → end p99 | CPU per chat | of it, worker threads (PGlite) | PostgreSQL CPU per chat |',
);
console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |');
for (const s of stats) {
  const cpu = s.row.cpuMs === undefined ? '–' : `${ms(s.row.cpuMs / USERS)} ms`;
  const workerCpu = s.row.workerCpuMs === undefined ? '–' : `${ms(s.row.workerCpuMs / USERS)} ms`;
  const dbCpu = s.row.dbCpuMs === undefined ? '–' : `${ms(s.row.dbCpuMs / USERS)} ms`;
  console.log(
    `| ${s.row.name} | ${s.complete}/${USERS} | ${(s.row.wallMs / 1000).toFixed(1)} s${ratio(s.row.wallMs, base?.wallMs)} ` +
      `| ${(s.complete / (s.row.wallMs / 1000)).toFixed(0)} ` +
      `| ${(s.first.p50 / 1000).toFixed(2)} / ${(s.first.p99 / 1000).toFixed(2)} s ` +
      `| ${ms(s.gap.p99)} ms${ratio(s.gap.p99, direct0?.gap.p99)} ` +
      `| ${(s.end.p99 / 1000).toFixed(2)} s | ${cpu} | ${workerCpu} | ${dbCpu} |`,
  );
}
const failures = stats.flatMap((s) =>
  s.row.results
    .filter((r) => !succeeded(r))
    .slice(0, 3)
    .map((r) => `${s.row.name}: ${r.error ?? `status ${r.status}, done ${r.done}`}`),
);
for (const row of rows.filter((r) => r.misframed)) {
  failures.push(`${row.name}: ${row.misframed} chats framed as the other kind (VOID ROW)`);
}
if (failures.length) console.log(`\nFailures (first 3 per row):\n${failures.join('\n')}`);
console.log(`\nLoad after the run: ${load()}`);

/**
 * The fake model's own stream, read like an OpenAI client: each `choices[0].delta.content`
 * is a fragment, `[DONE]` the end. `done` is set so the result counts as a successful chat.
 */
async function direct(baseUrl: string): Promise<ChatResult> {
  const result = await postSse(`${baseUrl}/chat/completions`, {
    model: 'fake',
    stream: true,
    messages: [{ role: 'user', content: 'Hello there' }],
  });
  const out = startResult(result);
  for (const event of result.events) {
    if (event.data === '[DONE]') {
      out.ended = true;
      out.done = true;
      continue;
    }
    const chunk = JSON.parse(event.data) as { choices?: { delta?: { content?: string } }[] };
    const content = chunk.choices?.[0]?.delta?.content;
    if (!content) continue;
    addFragment(out, content, event.at);
  }
  return out;
}

/** Gaps between fragments as the client sees them (tokens merged into one fragment count once). */
function gapsBetweenFragments(result: ChatResult): number[] {
  const times = result.fragmentTimes;
  return times.length > 1 ? times.slice(1).map((at, i) => at - (times[i] as number)) : gaps(result);
}

async function startRelay(
  llmUrl: string,
): Promise<{ url: string; pid: number; process: ChildProcess }> {
  const port = await freePort();
  const child = spawn(
    '/usr/bin/python3',
    ['-m', 'uvicorn', 'fastapi_relay:app', '--port', String(port), '--log-level', 'warning'],
    { cwd: RELAY_DIR, env: { ...process.env, LLM_BASE_URL: llmUrl }, stdio: 'inherit' },
  );
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 200; i++) {
    const ok = await fetch(`${url}/health`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return { url, pid: child.pid as number, process: child };
    await sleep(50);
  }
  throw new Error('the reference relay did not start (is python3-fastapi installed?)');
}
