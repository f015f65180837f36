/**
 * The background-job runner of two checkouts side by side: a baseline (another commit, e.g.
 * the one before pg-boss, whose kinds run on Parley's own lease loops) and this one, both with
 * every background kind switched on (feedback forwarding to one fake LangSmith, conversation
 * memory decisions from one fake model, embeddings off). Per contender:
 *
 * 1. start-up: the server's own startupMs ("Parley is listening", a first start on fresh data
 *    at LOG_LEVEL=info; every figure after it is from a second start on that data at warn),
 *    RSS after 5 s idle;
 * 2. idle CPU: CPU ms per second over 20 s with nothing to do (both servers idle at once);
 * 3. feedback forwarding: in alternating rounds (who goes first alternates, as in
 *    chat-cpu-ab), `feedbackPerRound` POST /feedback (10 at a time) on runs made by a warm-up
 *    of one chat per user, timed from the first POST until the fake LangSmith has every one of
 *    them, with the server's CPU over that span (the POSTs included) per forwarded feedback.
 *    Also the CPU of that span plus 3 s after it, less 3 s of the idle rate: what the
 *    bookkeeping after a send (marking the job done) adds.
 *
 * CPU is the server's process tree (cpuMsOfTree): one process unless PARLEY_WORKERS is set.
 *
 *   node bench/job-runner-ab.ts <baselineDir> [engine=embedded|server] [rounds=5] [feedbackPerRound=200]
 */
import { execSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { startFakeLangSmithServer } from '../test/support/fake-langsmith-server.ts';
import { reply, startFakeLlmServer } from '../test/support/fake-llm-server.ts';
import { createTestDatabase } from '../test/support/postgres-server.ts';
import { load, machineReport } from './support/machine.ts';
import { type BenchServer, startServer } from './support/parley.ts';
import { cpuMsOfTree, memoryOf } from './support/proc.ts';
import { postSse } from './support/sse-client.ts';
import { mib, ms, percentile, sleep } from './support/stats.ts';

const [baselineDir, engine = 'embedded'] = process.argv.slice(2);
const ROUNDS = Number(process.argv[4] ?? 5);
const PER_ROUND = Number(process.argv[5] ?? 200);
const PARALLEL = 10;
const IDLE_SETTLE_MS = 5_000;
const IDLE_MS = 20_000;
const TAIL_MS = 3_000;
const LANGSMITH_KEY = 'ls-bench-key';
/** How long a round waits for LangSmith to have all its feedback before it is recorded as short. */
const ROUND_LIMIT_MS = Number(process.env.BENCH_ROUND_LIMIT_MS ?? 60_000);
/** How long the warm-up waits for the memory decisions of its chats. */
const DECISIONS_LIMIT_S = Number(process.env.BENCH_DECISIONS_LIMIT_S ?? 60);
const progress = (text: string) => console.error(`${new Date().toISOString()} ${text}`);
if (!baselineDir || !['embedded', 'server'].includes(engine)) {
  throw new Error(
    'usage: job-runner-ab.ts <baselineDir> [engine=embedded|server] [rounds] [feedbackPerRound]',
  );
}
const loadBefore = load();
// Taken before the servers start: the commit they run (a checkout may move during a run).
const machine = machineReport();
const headNow = () => {
  try {
    return execSync('git rev-parse --short HEAD', { encoding: 'utf8' }).trim();
  } catch {
    return '?';
  }
};
const headAtStart = headNow();

// One fake model for both: chats get a short text; memory decisions (response_format set)
// are never worth keeping.
const llm = await startFakeLlmServer();
let decisions = 0;
let chatTurns = 0;
llm.respond((body) => {
  if (body.response_format !== undefined) {
    decisions++;
    return reply.text(JSON.stringify({ remember: false, memory: '' }));
  }
  chatTurns++;
  return reply.text('an answer to rate');
});
const langsmith = await startFakeLangSmithServer({ apiKey: LANGSMITH_KEY });
/** Feedback ids the fake LangSmith has received, with when (performance.now(), 2 ms polls). */
const arrived = new Map<string, number>();
let scanned = 0;
const scan = () => {
  const now = performance.now();
  const all = langsmith.feedback;
  for (; scanned < all.length; scanned++) {
    const id = all[scanned]?.id;
    if (id && !arrived.has(id)) arrived.set(id, now);
  }
};
const scanner = setInterval(scan, 2);
// The fakes keep every request for tests; a benchmark sends far more.
const trimmer = setInterval(() => {
  llm.requests.length = 0;
  llm.chats.length = 0;
  langsmith.requests.length = 0;
  langsmith.runs.clear();
}, 1_000);

interface Contender {
  name: string;
  server: BenchServer;
  database?: { url: string; drop(): Promise<void> };
  startupMs: number;
  /** Spawn to first 200 from /health of the second start (same data, warn level). */
  restartMs: number;
  rss: number;
  idleCpuPerS: number;
  runIds: string[];
  wallMs: number[];
  /** Of the round's feedback, how many LangSmith had by the round's end (all, or at the limit). */
  forwarded: number[];
  cpuPerFeedback: number[];
  cpuPerFeedbackTail: number[];
  failedPosts: number;
}

const contenders: Contender[] = await Promise.all(
  [
    { name: 'baseline', root: pathToFileURL(`${baselineDir.replace(/\/$/, '')}/`) },
    { name: 'this checkout (pg-boss)', root: undefined },
  ].map(async ({ name, root }) => {
    const database = engine === 'server' ? await createTestDatabase() : undefined;
    const env = {
      LLM_BASE_URL: llm.url,
      DATABASE_URL: database?.url,
      LANGSMITH_API_KEY: LANGSMITH_KEY,
      LANGSMITH_ENDPOINT: langsmith.url,
      CONV_RAG_ENABLED: 'true',
      EMBEDDINGS_PROVIDER: 'none',
      // Development mode: no API_TOKEN, the user is named in the body.
      API_TOKEN: undefined,
    };
    // First start on a fresh data dir / database at LOG_LEVEL=info, only for the server's own
    // startupMs (the "listening" line is an info line); then the same data again at warn, so
    // that request and job log lines do not count in the CPU figures.
    const first = await startServer({ root, env: { ...env, LOG_LEVEL: 'info' } });
    for (let i = 0; i < 200 && first.listening === undefined; i++) await sleep(10);
    const startupMs = Number(first.listening?.startupMs ?? Number.NaN);
    await first.stop({ keep: true });
    const server = await startServer({ root, dataDir: first.dataDir, env });
    return {
      name,
      server,
      database,
      startupMs,
      restartMs: server.healthyAt - server.spawnedAt,
      rss: 0,
      idleCpuPerS: Number.NaN,
      runIds: [],
      wallMs: [],
      forwarded: [],
      cpuPerFeedback: [],
      cpuPerFeedbackTail: [],
      failedPosts: 0,
    };
  }),
);
const [base, ours] = contenders as [Contender, Contender];

progress(
  `started: ${contenders.map((c) => `${c.name} pid ${c.server.pid} startupMs ${c.startupMs}`).join('; ')}`,
);
// 1. Start-up, and RSS after 5 s idle.
await sleep(IDLE_SETTLE_MS);
for (const c of contenders) {
  c.rss = memoryOf(c.server.pid).rss;
}

// 2. Idle CPU: both at once, over the same 20 s.
{
  const before = contenders.map((c) => cpuMsOfTree(c.server.pid));
  const startedAt = performance.now();
  await sleep(IDLE_MS);
  const seconds = (performance.now() - startedAt) / 1000;
  contenders.forEach((c, i) => {
    c.idleCpuPerS = (cpuMsOfTree(c.server.pid) - (before[i] as number)) / seconds;
  });
}

/** Runs `count` tasks, `PARALLEL` at a time. */
async function pool(count: number, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(PARALLEL, count) }, async () => {
      for (let i = next++; i < count; i = next++) await task(i);
    }),
  );
}

progress(
  `idle CPU: ${contenders.map((c) => `${c.name} ${c.idleCpuPerS.toFixed(2)} ms/s`).join('; ')}`,
);
// Warm-up (not measured): one chat per user, for the runs to rate.
let user = 0;
for (const c of contenders) {
  await pool(PER_ROUND, async () => {
    const result = await postSse(`${c.server.url}/chat`, {
      user_id: `jobs-ab-${++user}`,
      message: 'Hello there',
    });
    for (const event of result.events) {
      if (!event.data.startsWith('{')) continue;
      const value = JSON.parse(event.data) as { run_id?: string; __done?: unknown };
      if (typeof value.run_id === 'string') c.runIds.push(value.run_id);
    }
  });
  if (c.runIds.length < PER_ROUND) {
    throw new Error(`${c.name}: ${c.runIds.length} of ${PER_ROUND} chats gave a run_id`);
  }
}
// …and their memory decisions and traces: until the decisions stop for 3 s (at most 120 s).
{
  let last = -1;
  let still = 0;
  let waited = 0;
  for (; still < 3 && waited < DECISIONS_LIMIT_S; waited++) {
    await sleep(1_000);
    still = decisions === last ? still + 1 : 0;
    last = decisions;
  }
  progress(`warm-up: ${chatTurns} chats, ${decisions} decisions after waiting ${waited} s`);
}
const warmUp = { chats: chatTurns, decisions, feedbackBefore: langsmith.feedback.length };
const decisionsBeforeRounds = decisions;

let comment = 0;
/** One round on one contender: N ratings, until LangSmith has all of them. */
async function round(c: Contender): Promise<void> {
  const ids: string[] = [];
  const cpuBefore = cpuMsOfTree(c.server.pid);
  const startedAt = performance.now();
  await pool(PER_ROUND, async (i) => {
    const response = await fetch(`${c.server.url}/feedback`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        run_id: c.runIds[i],
        score: 1,
        comment: `bench comment ${++comment}: ${'good '.repeat(comment % 7)}`,
      }),
    });
    if (response.status !== 200) {
      c.failedPosts++;
      await response.arrayBuffer();
      return;
    }
    ids.push(((await response.json()) as { feedback_id: string }).feedback_id);
  });
  const deadline = performance.now() + ROUND_LIMIT_MS;
  let complete = false;
  for (;;) {
    scan();
    if (ids.every((id) => arrived.has(id))) {
      complete = true;
      break;
    }
    if (performance.now() > deadline) break;
    await sleep(2);
  }
  const got = ids.filter((id) => arrived.has(id));
  // Complete: when the last one arrived. Short: the limit (figures per feedback that arrived).
  const endAt = complete
    ? Math.max(...got.map((id) => arrived.get(id) as number))
    : performance.now();
  const cpuAtEnd = cpuMsOfTree(c.server.pid);
  c.wallMs.push(endAt - startedAt);
  c.forwarded.push(got.length);
  c.cpuPerFeedback.push((cpuAtEnd - cpuBefore) / Math.max(1, got.length));
  await sleep(TAIL_MS);
  scan();
  const gotAfterTail = ids.filter((id) => arrived.has(id)).length;
  const tail = cpuMsOfTree(c.server.pid) - cpuBefore - (c.idleCpuPerS * TAIL_MS) / 1000;
  c.cpuPerFeedbackTail.push(tail / Math.max(1, gotAfterTail));
  progress(
    `${c.name}: ${got.length}/${ids.length} forwarded in ${ms(endAt - startedAt)} ms${complete ? '' : ' (round limit reached)'}, ${(c.cpuPerFeedback.at(-1) as number).toFixed(2)} ms CPU each; ${gotAfterTail} after the 3 s tail`,
  );
}

const roundLoads: string[] = [];
for (let r = 0; r < ROUNDS; r++) {
  const order = r % 2 === 0 ? contenders : [...contenders].reverse();
  for (const c of order) await round(c);
  roundLoads.push(load());
}

clearInterval(scanner);
clearInterval(trimmer);
const warnings = contenders.map((c) => ({
  name: c.name,
  lines: c.server.logs.filter((line) => /"level":(40|50|60)/.test(line)),
}));
for (const c of contenders) {
  await c.server.stop();
  rmSync(c.server.dataDir, { recursive: true, force: true });
  await c.database?.drop();
}
const unexpected = [...langsmith.unexpected, ...llm.unexpected];
const duplicates = langsmith.duplicateCreates;
const feedbackTotal = langsmith.feedback.length;
await llm.close();
await langsmith.close();

// Report.
const sorted = (values: number[]) => [...values].sort((a, b) => a - b);
const p = (values: number[], q: number) => percentile(sorted(values), q);
const wins = (of: (c: Contender) => number[]) =>
  of(ours).filter((value, i) => value < (of(base)[i] as number)).length;

console.log(`## job-runner-ab (${engine} engine)\n`);
console.log(`\`\`\`\n${machine}\nbaseline: ${baselineDir}\n\`\`\`\n`);
if (headNow() !== headAtStart) {
  console.log(
    `**This checkout moved during the run**: ${headAtStart} at the start (what the servers ran), ${headNow()} at the end.\n`,
  );
}
console.log(`load before: ${loadBefore}\n`);
console.log(`command: \`node bench/job-runner-ab.ts ${process.argv.slice(2).join(' ')}\`\n`);
console.log(
  `Both servers side by side, one fake model and one fake LangSmith; background kinds on (LANGSMITH_API_KEY, CONV_RAG_ENABLED=true, EMBEDDINGS_PROVIDER=none), development mode. Warm-up: ${PER_ROUND} chats per server (one per user); the fake model answered ${warmUp.chats} chats and ${warmUp.decisions} memory decisions (all "remember": false); LangSmith had ${warmUp.feedbackBefore} feedback before the rounds.\n`,
);

console.log('### Start-up and idle\n');
console.log(
  '| checkout | startupMs (own log, fresh data) | restart to first 200 (same data) | RSS after 5 s idle | idle CPU (20 s) |',
);
console.log('| --- | ---: | ---: | ---: | ---: |');
for (const c of contenders) {
  console.log(
    `| ${c.name} | ${ms(c.startupMs)} ms | ${ms(c.restartMs)} ms | ${mib(c.rss)} MiB | ${c.idleCpuPerS.toFixed(2)} ms/s |`,
  );
}

console.log(
  `\n### Feedback forwarding: ${ROUNDS} alternating rounds of ${PER_ROUND} POST /feedback (${PARALLEL} at a time)\n`,
);
console.log(
  'Wall: from the first POST until the fake LangSmith has all of them. CPU: server process over that span, POSTs included, per feedback; "+3 s tail": the same span plus 3 s after, less 3 s of idle CPU.\n',
);
const table = (title: string, of: (c: Contender) => number[], unit: string) => {
  console.log(`| ${title} | median | p90 | min | max | rounds lower |`);
  console.log('| --- | ---: | ---: | ---: | ---: | ---: |');
  for (const c of contenders) {
    const values = of(c);
    const lower = c === ours ? wins(of) : ROUNDS - wins(of);
    console.log(
      `| ${c.name} | ${ms(p(values, 50))} ${unit} | ${ms(p(values, 90))} ${unit} | ${ms(Math.min(...values))} ${unit} | ${ms(Math.max(...values))} ${unit} | ${lower}/${ROUNDS} |`,
    );
  }
  console.log(
    `\nthis checkout / baseline (medians): ${(p(of(ours), 50) / p(of(base), 50)).toFixed(2)}\n`,
  );
};
console.log(
  `Feedback that reached LangSmith within its round: ${contenders.map((c) => `${c.name} ${c.forwarded.reduce((a, b) => a + b, 0)}/${ROUNDS * PER_ROUND}`).join(', ')}.\n`,
);
table('wall per round', (c) => c.wallMs, 'ms');
table('CPU per feedback', (c) => c.cpuPerFeedback, 'ms');
table('CPU per feedback, +3 s tail', (c) => c.cpuPerFeedbackTail, 'ms');

console.log(
  `A round whose feedback had not all reached LangSmith within ${ROUND_LIMIT_MS / 1000} s is cut there: its wall is the limit and its CPU is per feedback that arrived (the rest stays queued and may arrive in later rounds, counted in none). Memory decisions the fake model answered during the rounds (work left from the warm-up): ${decisions - decisionsBeforeRounds}.\n`,
);
console.log('Per round (ms; wall / CPU per feedback / forwarded of the round):\n');
console.log(`| round | first | ${contenders.map((c) => c.name).join(' | ')} | load after |`);
console.log(`| ---: | --- | ${contenders.map(() => '---:').join(' | ')} | --- |`);
for (let r = 0; r < ROUNDS; r++) {
  const first = r % 2 === 0 ? base.name : ours.name;
  const cells = contenders.map(
    (c) =>
      `${ms(c.wallMs[r] as number)} / ${(c.cpuPerFeedback[r] as number).toFixed(2)} / ${c.forwarded[r]}/${PER_ROUND}`,
  );
  console.log(`| ${r + 1} | ${first} | ${cells.join(' | ')} | ${roundLoads[r]} |`);
}

console.log(
  `\nfeedback received by LangSmith in all: ${feedbackTotal} (duplicate creates refused: ${duplicates}); failed POSTs: ${contenders.map((c) => `${c.name} ${c.failedPosts}`).join(', ')}; unexpected requests at the fakes: ${unexpected.length}`,
);
for (const { name, lines } of warnings) {
  if (lines.length === 0) continue;
  console.log(`\n${name} logged ${lines.length} warnings/errors; the first:\n`);
  console.log(`\`\`\`\n${lines.slice(0, 3).join('\n').slice(0, 2_000)}\n\`\`\``);
}
console.log(`\nuptime at end: ${load()}`);
