import pino from 'pino';
import type { ChatEvent } from '../src/assistant/chat-events.ts';
import { encodeEvent, encodeNumberedEvent } from '../src/http/sse.ts';
import { DetachedRuns } from '../src/runs/detached-runs.ts';
import { RunEventRepository } from '../src/storage/run-event-repository.ts';
import { openFreshDatabase } from './support/fresh-database.ts';
import { load, machineReport } from './support/machine.ts';
import { cpuMsByThread } from './support/proc.ts';
import { sleep } from './support/stats.ts';

const [engine = 'embedded'] = process.argv.slice(2);
const RUNS = Number(process.argv[3] ?? 500);
const TOKENS = Number(process.argv[4] ?? 100);
const PACE_MS = Number(process.argv[5] ?? 50);
const ROUNDS = Number(process.argv[6] ?? 4);
const logger = pino({ level: 'warn' });
/** A question as long as a typical one, registered with each run (its pending turn). */
const QUESTION = 'What did the lease say about pets, and is the deposit refundable at the end?';

interface Variant {
  name: string;
  /** Undefined: plain, no DetachedRuns. */
  resumable?: { ddl: string[]; quietFlushMs?: number };
}

const ALL_VARIANTS: Variant[] = [
  { name: 'plain (no DetachedRuns)' },
  { name: 'resumable, as shipped', resumable: { ddl: [] } },
  {
    name: 'resumable, no batches → run_streams foreign key',
    resumable: {
      ddl: [
        'ALTER TABLE run_event_batches DROP CONSTRAINT run_event_batches_run_id_run_streams_run_id_fk',
      ],
    },
  },
  {
    name: 'resumable, no partial holder index',
    resumable: { ddl: ['DROP INDEX run_streams_holder_idx'] },
  },
  { name: 'resumable, quiet flush every 2 s', resumable: { ddl: [], quietFlushMs: 2_000 } },
  { name: 'resumable, quiet flush every 5 s', resumable: { ddl: [], quietFlushMs: 5_000 } },
  {
    name: 'resumable, stored only at the end (quiet flush 60 s)',
    resumable: { ddl: [], quietFlushMs: 60_000 },
  },
];
const VARIANTS = process.env.BENCH_VARIANTS
  ? process.env.BENCH_VARIANTS.split(',').map((i) => ALL_VARIANTS[Number(i)] as Variant)
  : ALL_VARIANTS;

/** Every run's next token is released at once, every PACE_MS (a burst's runs in step). */
class Pacer {
  #tick: Promise<void> = Promise.resolve();
  #release: () => void = () => {};
  constructor() {
    this.#arm();
  }
  #arm(): void {
    this.#tick = new Promise((resolve) => {
      this.#release = resolve;
    });
  }
  get tick(): Promise<void> {
    return this.#tick;
  }
  step(): void {
    const release = this.#release;
    this.#arm();
    release();
  }
}

async function* source(pacer: Pacer, runId: string): AsyncGenerator<ChatEvent> {
  for (let i = 0; i < TOKENS; i++) {
    await pacer.tick;
    yield { type: 'text', text: ` word${i}` };
  }
  yield { type: 'done', runId };
}

const threadsMs = () => {
  const threads = cpuMsByThread(process.pid);
  let all = 0;
  for (const ms of threads.values()) all += ms;
  return {
    all,
    main: threads.get('MainThread') ?? 0,
    worker: threads.get('WorkerThread') ?? 0,
    v8: threads.get('V8Worker') ?? 0,
  };
};
type Cost = ReturnType<typeof threadsMs>;

/** CPU per run (ms): all threads, and the main thread's, PGlite's and V8's helpers' shares. */
async function measure(variant: Variant): Promise<Cost> {
  const { database, done } = await openFreshDatabase(engine, logger);
  const shutdown = new AbortController();
  const options = variant.resumable;
  let runs: DetachedRuns | undefined;
  try {
    for (const statement of options?.ddl ?? []) await database.db.$client.query(statement);
    if (options) {
      runs = new DetachedRuns({
        store: new RunEventRepository(database.db, { notify: engine === 'server' }),
        logger,
        answerMaxMs: 600_000,
        leaseMs: 30_000,
        keepMs: 3_600_000,
        shutdown: shutdown.signal,
        quietFlushMs: options.quietFlushMs,
      });
      await runs.start();
    }
    await sleep(500);
    const pacer = new Pacer();
    const before = threadsMs();
    let written = 0;
    const driven = Array.from({ length: RUNS }, async (_, i) => {
      const runId = crypto.randomUUID();
      const userId = `user-${i}`;
      if (!runs) {
        for await (const event of source(pacer, runId)) written += encodeEvent(event).length;
        return;
      }
      await runs.begin({ runId, userId, turn: { question: QUESTION } }, () => source(pacer, runId));
      const events = await runs.listen(runId, userId, 0, new AbortController().signal, {
        bounded: false,
      });
      for await (const event of events ?? []) written += encodeNumberedEvent(event).length;
    });
    for (let t = 0; t <= TOKENS; t++) {
      await sleep(PACE_MS);
      pacer.step();
    }
    await Promise.all(driven);
    await runs?.drain();
    // The last flush's statement has returned; let the thread's time be counted.
    await sleep(200);
    const after = threadsMs();
    if (written === 0) throw new Error('no events were read');
    const per = (key: keyof Cost) => (after[key] - before[key]) / RUNS;
    return { all: per('all'), main: per('main'), worker: per('worker'), v8: per('v8') };
  } finally {
    shutdown.abort();
    await runs?.close();
    await done();
  }
}

console.log(`## run-events-cost (${engine} engine)\n\n\`\`\`\n${machineReport()}\n\`\`\`\n`);
console.log(
  `${RUNS} runs at once, ${TOKENS} tokens each, one every ${PACE_MS} ms to every run, each read by one local listener; ${ROUNDS} rounds, each variant on a fresh database per round, order alternating. CPU of this process per run (all threads; the worker thread is the embedded engine's PGlite).\n`,
);
const results = new Map<string, Cost[]>(VARIANTS.map((variant) => [variant.name, []]));
for (let round = 0; round < ROUNDS; round++) {
  for (const variant of round % 2 === 0 ? VARIANTS : [...VARIANTS].reverse()) {
    results.get(variant.name)?.push(await measure(variant));
  }
  console.log(`round ${round + 1} done (${load()})`);
}
const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
};
console.log(
  '\n| variant | CPU per run, median (rounds) ms | main thread | PGlite (worker thread) | V8 helpers |\n| --- | --- | --- | --- | --- |',
);
for (const [name, costs] of results) {
  const of = (key: keyof Cost) => costs.map((cost) => cost[key]);
  const list = (values: number[]) => values.map((v) => v.toFixed(2)).join(', ');
  console.log(
    `| ${name} | **${median(of('all')).toFixed(2)}** (${list(of('all'))}) | ${median(of('main')).toFixed(2)} | ${median(of('worker')).toFixed(2)} | ${median(of('v8')).toFixed(2)} |`,
  );
}
process.exit(0);
