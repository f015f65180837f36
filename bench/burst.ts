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
 * (rows may also name server-workers2). Throughput is completed chats per second of wall time:
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
import { cpuMsOfTree } from './support/proc.ts';
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
}

console.log(
  `## burst of new users (${USERS} users at once, ${TOKENS} tokens every ${PACE_MS} ms)\n`,
);
console.log(`\`\`\`\n${machineReport()}\n\`\`\`\n`);

const fake = await startFakeLlm({ tokens: TOKENS, delayMs: PACE_MS });
const rows: Row[] = [];
let run = 0;

/** All users at once; every one of them new to the target (ids never used before). */
async function burst(name: string, send: (userId: string) => Promise<ChatResult>, pid?: number) {
  run += 1;
  const before = pid === undefined ? 0 : cpuMsOfTree(pid);
  const started = performance.now();
  const results = await Promise.all(
    Array.from({ length: USERS }, (_, i) => send(`burst-${run}-${i}`)),
  );
  const row: Row = { name, results, wallMs: performance.now() - started };
  if (pid !== undefined) row.cpuMs = cpuMsOfTree(pid) - before;
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
for (const { row, name, server: onServer, workers } of parleyRows) {
  if (!ROWS.includes(row)) continue;
  const database = onServer ? await createTestDatabase() : undefined;
  const server = await startServer({
    env: { LLM_BASE_URL: fake.url, DATABASE_URL: database?.url, PARLEY_WORKERS: workers },
  });
  const send = (userId: string) => chat(server.url, userId);
  // With workers, warm every one of them: connections are spread by the primary.
  await warm(send);
  if (workers) await warm(send);
  await burst(name, send, server.pid);
  await server.stop();
  await database?.drop();
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
  '| | completed | wall | chats/s | first fragment p50 / p99 | gap between fragments p99 | last fragment → end p99 | CPU per chat |',
);
console.log('| --- | --- | --- | --- | --- | --- | --- | --- |');
for (const s of stats) {
  const cpu = s.row.cpuMs === undefined ? '–' : `${ms(s.row.cpuMs / USERS)} ms`;
  console.log(
    `| ${s.row.name} | ${s.complete}/${USERS} | ${(s.row.wallMs / 1000).toFixed(1)} s${ratio(s.row.wallMs, base?.wallMs)} ` +
      `| ${(s.complete / (s.row.wallMs / 1000)).toFixed(0)} ` +
      `| ${(s.first.p50 / 1000).toFixed(2)} / ${(s.first.p99 / 1000).toFixed(2)} s ` +
      `| ${ms(s.gap.p99)} ms${ratio(s.gap.p99, direct0?.gap.p99)} ` +
      `| ${(s.end.p99 / 1000).toFixed(2)} s | ${cpu} |`,
  );
}
const failures = stats.flatMap((s) =>
  s.row.results
    .filter((r) => !succeeded(r))
    .slice(0, 3)
    .map((r) => `${s.row.name}: ${r.error ?? `status ${r.status}, done ${r.done}`}`),
);
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
