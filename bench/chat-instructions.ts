/**
 * Instructions the server executes per chat and per paced token, counted by valgrind's
 * callgrind, for two checkouts (or this checkout with plain and resumable chats).
 *
 * Why: CPU time on this machine moves by more than the targets being judged (issues 31 and 32:
 * +5 % and +10 %): the same pair measured +10 % and +19 % in two runs of chat-cpu-ab.ts, with
 * nothing else running. An instruction count does not depend on what else the machine does or
 * on its clock; it leaves out what instructions do not show (cache misses, system calls' time
 * in the kernel, waiting), so it is a second figure beside chat-cpu-ab's, not a replacement.
 * Each server runs under `valgrind --tool=callgrind` (all its threads, PGlite's worker among
 * them, counted together; the PostgreSQL server's backends are not in it), started and warmed
 * up, then for each phase its counters are zeroed, the chats run, and the counters dumped
 * (`callgrind_control`).
 *
 *   node bench/chat-instructions.ts <baselineDir|resumable> [engine=embedded] [chats=60] [tokens=100] [parallel=10] [delayMs=50] [repeats=2]
 *
 * Under valgrind the server runs ~50–100× slower, so what depends on time changes: tokens that
 * arrive together are sent together. The model's tokens are paced (`delayMs`) slowly enough
 * that the server keeps up with each one; each phase also reports the instructions the server
 * spends idle (timers, pollers) per second, measured in a phase with no chats, so a phase that
 * took longer on one side is not charged for its idle time (the "idle-corrected" figures).
 * BENCH_ENV and BENCH_USERS as in chat-cpu-ab.ts.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createTestDatabase } from '../test/support/postgres-server.ts';
import { startFakeLlm } from './support/fake-llm.ts';
import { machineReport } from './support/machine.ts';
import { startServer } from './support/parley.ts';
import { chat, succeeded } from './support/sse-client.ts';
import { sleep } from './support/stats.ts';

const [baselineDir, engine = 'embedded'] = process.argv.slice(2);
const CHATS = Number(process.argv[4] ?? 60);
const TOKENS = Number(process.argv[5] ?? 100);
const PARALLEL = Number(process.argv[6] ?? 10);
const DELAY_MS = Number(process.argv[7] ?? 50);
const REPEATS = Number(process.argv[8] ?? 2);
if (!baselineDir) throw new Error('usage: chat-instructions.ts <baselineDir|resumable> [engine] …');
const RESUMABLE_AB = baselineDir === 'resumable';
const USERS = Number(process.env.BENCH_USERS ?? 0);
/** After a phase's last chat: a resumable run's last events are stored after `__done`. */
const SETTLE_MS = 3_000;
const IDLE_MS = 20_000;
const WARM_SETTLE_MS = 30_000;

interface Phase {
  instructions: number;
  wallMs: number;
}

/** The server's HOST (spawnParley sets it) and a user name, for vgdb's file names. */
const VGDB_NAMES = { HOST: '127.0.0.1', USER: 'parley-bench', LOGNAME: 'parley-bench' };

const outDir = join(tmpdir(), `parley-callgrind-${process.pid}`);

async function contender(name: string, root: URL | undefined, resumable: boolean, tag: string) {
  const fake = await startFakeLlm({ tokens: 1, delayMs: DELAY_MS });
  const database = engine === 'server' ? await createTestDatabase() : undefined;
  // vgdb's pipes of each server under a prefix of this run's own (see VGDB_NAMES).
  const vgdbPrefix = join(tmpdir(), `parley-vgdb-${tag}-${process.pid}`);
  const server = await startServer({
    root,
    wrapper: [
      'valgrind',
      '--tool=callgrind',
      '--smc-check=all-non-file',
      `--vgdb-prefix=${vgdbPrefix}`,
      `--callgrind-out-file=${outDir}-${tag}.%p`,
    ],
    startTimeoutMs: 15 * 60_000,
    env: {
      LLM_BASE_URL: fake.url,
      DATABASE_URL: database?.url,
      // Leases sized for a server running ~100× slower: a chat's turn lock and a job's lease
      // renewed in time, as they are at full speed (their renewals are idle work, below).
      CHAT_TURN_TTL_SECONDS: '300',
      JOB_LEASE_SECONDS: '600',
      ...VGDB_NAMES,
      ...(JSON.parse(process.env.BENCH_ENV ?? '{}') as Record<string, string>),
    },
  });
  // vgdb finds the server by a file name that holds the user and HOST of each side's
  // environment: both get the same.
  const control = (action: string) =>
    execFileSync('callgrind_control', [`--vgdb-prefix=${vgdbPrefix}`, action, String(server.pid)], {
      stdio: 'ignore',
      env: { ...process.env, ...VGDB_NAMES },
    });
  let user = 0;
  const chats = async (tokens: number, count: number) => {
    await fake.setReply({ tokens, delayMs: DELAY_MS });
    for (let done = 0; done < count; done += PARALLEL) {
      const results = await Promise.all(
        Array.from({ length: Math.min(PARALLEL, count - done) }, () =>
          chat(server.url, `ci-${tag}-${USERS > 0 ? ++user % USERS : ++user}`, undefined, {
            resumable,
          }),
        ),
      );
      const failed = results.find((r) => !succeeded(r));
      if (failed) throw new Error(`${name}: a chat failed: ${failed.error ?? 'no end'}`);
      if (!results.every((r) => (resumable ? r.numbered > 0 : r.numbered === 0))) {
        throw new Error(`${name}: a chat came back with the other framing`);
      }
    }
  };
  let dumps = 0;
  /** Instructions of everything the server did while `work` ran (and SETTLE_MS after). */
  const measure = async (work: () => Promise<unknown>): Promise<Phase> => {
    control('--zero');
    const started = performance.now();
    await work();
    const wallMs = performance.now() - started;
    control('--dump');
    dumps++;
    return { instructions: await readDump(server.pid, tag, dumps), wallMs };
  };
  return {
    name,
    async run() {
      // Warm-up: V8's tiers (counted by calls, not time) reached as in a long-running server.
      await chats(1, 10 * PARALLEL);
      await chats(TOKENS, 2 * PARALLEL);
      // V8 compiles hot functions on background threads: let that finish outside the phases.
      await sleep(WARM_SETTLE_MS);
      const idle = await measure(() => sleep(IDLE_MS));
      const one: Phase[] = [];
      const many: Phase[] = [];
      for (let r = 0; r < REPEATS; r++) {
        one.push(await measure(() => chats(1, CHATS).then(() => sleep(SETTLE_MS))));
        many.push(await measure(() => chats(TOKENS, CHATS).then(() => sleep(SETTLE_MS))));
      }
      await server.stop();
      await database?.drop();
      await fake.close();
      return { name, idlePerMs: idle.instructions / idle.wallMs, one, many };
    },
  };
}

/** The `summary:` of the n-th dump (callgrind writes `<file>.<pid>.<n>`); waits for it. */
async function readDump(pid: number, tag: string, n: number): Promise<number> {
  const file = `${outDir}-${tag}.${pid}.${n}`;
  for (let tries = 0; tries < 6_000; tries++) {
    try {
      const match = /^summary: (\d+)$/m.exec(readFileSync(file, 'utf8'));
      if (match) return Number(match[1]);
    } catch {
      // not written yet
    }
    await sleep(100);
  }
  throw new Error(`callgrind wrote no ${file}`);
}

const contenders = RESUMABLE_AB
  ? [
      await contender('plain', undefined, false, 'a'),
      await contender('resumable', undefined, true, 'b'),
    ]
  : [
      await contender('baseline', pathToFileURL(`${baselineDir.replace(/\/$/, '')}/`), false, 'a'),
      await contender('this checkout', undefined, false, 'b'),
    ];
// Side by side: instruction counts do not depend on the other's load, and this halves the wall.
const results = await Promise.all(contenders.map((c) => c.run()));
for (const file of readdirSync(tmpdir())) {
  if (file.startsWith(`parley-callgrind-${process.pid}`)) rmSync(join(tmpdir(), file));
}

const M = (value: number) => (value / 1e6).toFixed(2);
const k = (value: number) => (value / 1e3).toFixed(1);
console.log(`## chat-instructions (${engine} engine)\n`);
console.log(
  `\`\`\`\n${machineReport()}\n${RESUMABLE_AB ? 'both this checkout; the second one\'s chats "resumable": true' : `baseline: ${baselineDir}`}\n\`\`\`\n`,
);
console.log(
  `${REPEATS} repeats of ${CHATS} chats of 1 token, then ${CHATS} of ${TOKENS} tokens (one every ${DELAY_MS} ms), ${PARALLEL} at a time, each server under callgrind; instructions of every thread of the server's process.\n`,
);
console.log(
  '| checkout | repeat | per chat (1 token), M instr. | idle-corrected | per paced token, k instr. | idle-corrected | idle, k instr. per s |',
);
console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: |');
const perChat = (phase: Phase, idlePerMs = 0) =>
  (phase.instructions - idlePerMs * phase.wallMs) / CHATS;
const perToken = (one: Phase, many: Phase, idlePerMs = 0) =>
  (perChat(many, idlePerMs) - perChat(one, idlePerMs)) / (TOKENS - 1);
for (const r of results) {
  for (let i = 0; i < REPEATS; i++) {
    const one = r.one[i] as Phase;
    const many = r.many[i] as Phase;
    console.log(
      `| ${r.name} | ${i + 1} | ${M(perChat(one))} | ${M(perChat(one, r.idlePerMs))} | ${k(perToken(one, many))} | ${k(perToken(one, many, r.idlePerMs))} | ${k(r.idlePerMs * 1000)} |`,
    );
  }
}
const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;
const [base, ours] = results as [(typeof results)[0], (typeof results)[0]];
const ratio = (f: (r: typeof base, i: number) => number) =>
  mean(Array.from({ length: REPEATS }, (_, i) => f(ours, i))) /
  mean(Array.from({ length: REPEATS }, (_, i) => f(base, i)));
const chatOf = (r: typeof base, i: number) => perChat(r.one[i] as Phase, r.idlePerMs);
const tokenOf = (r: typeof base, i: number) =>
  perToken(r.one[i] as Phase, r.many[i] as Phase, r.idlePerMs);
const rawChatOf = (r: typeof base, i: number) => perChat(r.one[i] as Phase);
const rawTokenOf = (r: typeof base, i: number) => perToken(r.one[i] as Phase, r.many[i] as Phase);
console.log(
  `\n${ours.name} / ${base.name}, mean of repeats: per chat ${ratio(rawChatOf).toFixed(3)}, per paced token ${ratio(rawTokenOf).toFixed(3)} (idle-corrected: ${ratio(chatOf).toFixed(3)}, ${ratio(tokenOf).toFixed(3)})`,
);
