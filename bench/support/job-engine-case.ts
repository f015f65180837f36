import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import pg from 'pg';
import { startEmbeddedEngine } from '../../src/storage/embedded-engine.ts';
import { createTestDatabase } from '../../test/support/postgres-server.ts';
import {
  describe,
  type JobInfo,
  type Libraries,
  type Mode,
  type Target,
  VARIANTS,
} from './job-engine-variants.ts';
import { type Summary, sleep, summarize } from './stats.ts';

/**
 * One library on one engine, in a process of its own so that its memory and CPU are its own
 * (run by bench/job-engines.ts, which also documents what is measured). It prints one line,
 * `RESULT <json>`. With `{"kill": …}` it is instead the worker that gets SIGKILLed mid-job:
 * it enqueues one job, takes it, prints `started <json>` and hangs.
 */

export interface CaseInput {
  variant: number;
  engine: 'embedded' | 'server';
  libs: Libraries;
  jobs: number;
  pickups: number;
  /** Longest wait for a killed worker's job with the library's default settings, seconds. */
  killWaitDefault: number;
  killWaitConfigured: number;
}

interface KillInput {
  kill: { variant: number; mode: Mode; target: Target; libs: Libraries };
}

export interface KillResult {
  /** Seconds from the SIGKILL to another worker starting the job; undefined if it did not. */
  seconds?: number;
  note: string;
}

export interface CaseResult {
  variant: string;
  engine: string;
  importMs?: number;
  startMs?: number;
  rssAddedBytes?: number;
  /** The same, once all the jobs have run. */
  rssAfterJobsBytes?: number;
  objects?: { tables: number; indexes: number; functions: number };
  enqueued: number;
  enqueuePerSecond?: number;
  workerStartMs?: number;
  drained: number;
  drainMs?: number;
  cpuMicrosPerJob?: number;
  pickup?: Summary;
  pickupsMissed: number;
  /** Process CPU while the worker waits 10 s with nothing to do, ms per second. */
  idleCpuMsPerSecond?: number;
  kill: Partial<Record<Mode, KillResult>>;
  errors: string[];
}

const START_TIMEOUT_MS = 30_000;
const ENQUEUE_TIMEOUT_MS = 120_000;
const DRAIN_TIMEOUT_MS = 60_000;
const PICKUP_TIMEOUT_MS = 10_000;
const STOP_TIMEOUT_MS = 10_000;
const KILL_ID = 'killed-mid-job';
const IDLE_MS = 10_000;

const SHARED_BUFFERS = '16MB'; // what EMBEDDED_DB_SHARED_BUFFERS=auto gives a store without vectors
const SERVER_POOL_MAX = 10; // Parley's default DB_POOL_MAX

class Timeout extends Error {}

function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Timeout(`${what}: no answer in ${ms / 1000} s`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Calls of the handler by job id: when each ran, and promises waiting for one. */
class Seen {
  readonly at = new Map<string, number>();
  readonly #waiting = new Map<string, () => void>();
  #count = 0;
  #countWaiter: { target: number; resolve: () => void } | undefined;

  record(id: string): void {
    this.at.set(id, performance.now());
    this.#count++;
    this.#waiting.get(id)?.();
    if (this.#countWaiter && this.#count >= this.#countWaiter.target) this.#countWaiter.resolve();
  }
  get count(): number {
    return this.#count;
  }
  waitFor(id: string): Promise<void> {
    if (this.at.has(id)) return Promise.resolve();
    return new Promise((resolve) => this.#waiting.set(id, resolve));
  }
  waitForCount(target: number): Promise<void> {
    if (this.#count >= target) return Promise.resolve();
    return new Promise((resolve) => {
      this.#countWaiter = { target, resolve };
    });
  }
}

const OBJECTS_SQL = `
  SELECT
    (SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN ('pg_catalog', 'information_schema')
        AND n.nspname NOT LIKE 'pg_toast%')::int AS tables,
    (SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE c.relkind IN ('i', 'I') AND n.nspname NOT IN ('pg_catalog', 'information_schema')
        AND n.nspname NOT LIKE 'pg_toast%')::int AS indexes,
    (SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
      WHERE n.nspname NOT IN ('pg_catalog', 'information_schema'))::int AS functions`;

type Objects = NonNullable<CaseResult['objects']>;

/**
 * Statements of every kind the job engines run, before the memory reading: PGlite grows its
 * WebAssembly memory and compiles code on first use, which would otherwise count against
 * whichever library runs first (the lease loop's one CREATE TABLE read +109 MiB without this).
 */
async function warmUp(target: Target): Promise<void> {
  const client = new pg.Client(target.connection);
  await client.connect();
  try {
    await client.query(`CREATE TABLE warm_up (id uuid PRIMARY KEY, at timestamptz, body jsonb);
      CREATE INDEX ON warm_up (at);
      CREATE FUNCTION warm_up_now() RETURNS timestamptz LANGUAGE sql AS 'SELECT now()'`);
    for (let i = 0; i < 200; i++) {
      await client.query(
        'INSERT INTO warm_up VALUES (gen_random_uuid(), warm_up_now(), $1::jsonb)',
        [JSON.stringify({ i })],
      );
    }
    await client.query(`UPDATE warm_up SET at = now() WHERE id IN
      (SELECT id FROM warm_up ORDER BY at LIMIT 50 FOR UPDATE SKIP LOCKED)`);
    await client.query(`DROP TABLE warm_up; DROP FUNCTION warm_up_now()`);
  } finally {
    await client.end();
  }
}

/** Counted on a connection of its own, closed at once (on PGlite it holds the only session). */
async function countObjects(target: Target): Promise<Objects> {
  const client = new pg.Client(target.connection);
  await client.connect();
  try {
    return (await client.query<Objects>(OBJECTS_SQL)).rows[0] as Objects;
  } finally {
    await client.end();
  }
}

async function openTarget(engine: 'embedded' | 'server') {
  if (engine === 'embedded') {
    const dataDir = mkdtempSync(join(tmpdir(), 'parley-jobs-'));
    const embedded = await startEmbeddedEngine(dataDir, SHARED_BUFFERS);
    const target: Target = { engine, connection: embedded.connection, poolMax: 1 };
    return {
      target,
      close: async () => {
        await embedded.stop();
        rmSync(dataDir, { recursive: true, force: true });
      },
    };
  }
  const database = await createTestDatabase();
  const target: Target = {
    engine,
    connection: { connectionString: database.url },
    poolMax: SERVER_POOL_MAX,
  };
  return { target, close: () => database.drop() };
}

const gc = () => (globalThis as { gc?: () => void }).gc?.();

/**
 * RSS once it stops moving: after a GC, sampled every 500 ms until three samples in a row lie
 * within 1 MiB of each other (at most 15 s). The embedded engine frees the seed's
 * decompression buffers and compiled code for seconds after it starts; a single reading
 * there once put the lease loop's RSS after its jobs 309 MiB below its reading before.
 */
async function settledRss(): Promise<number> {
  gc();
  const samples = [process.memoryUsage().rss];
  const deadline = performance.now() + 15_000;
  while (performance.now() < deadline) {
    await sleep(500);
    samples.push(process.memoryUsage().rss);
    const last = samples.slice(-3);
    if (last.length === 3 && Math.max(...last) - Math.min(...last) < 1024 * 1024) break;
  }
  return samples.at(-1) as number;
}

async function runCase(input: CaseInput): Promise<CaseResult> {
  const variant = VARIANTS[input.variant];
  if (!variant) throw new Error(`no variant ${input.variant}`);
  const result: CaseResult = {
    variant: variant.name,
    engine: input.engine,
    enqueued: 0,
    drained: 0,
    pickupsMissed: 0,
    kill: {},
    errors: [],
  };
  const fail = (error: unknown) => result.errors.push(describe(error));
  const { target, close } = await openTarget(input.engine);
  try {
    await measure(input, target, result, fail);
    if (variant.killTests) {
      const waits = { default: input.killWaitDefault, configured: input.killWaitConfigured };
      for (const mode of ['default', 'configured'] as const) {
        result.kill[mode] = await killedWorker(input, target, mode, waits[mode]).catch(
          (error: unknown) => ({ note: describe(error) }),
        );
      }
    }
  } finally {
    await within(close(), STOP_TIMEOUT_MS, 'closing the database').catch(fail);
  }
  return result;
}

/** Start-up, memory, schema, enqueue rate, CPU per job and idle pickup, in that order. */
async function measure(
  input: CaseInput,
  target: Target,
  result: CaseResult,
  fail: (error: unknown) => void,
): Promise<void> {
  const variant = VARIANTS[input.variant];
  if (!variant) return;
  const before = await countObjects(target);
  await warmUp(target);
  const rssBefore = await settledRss();
  let started = performance.now();
  const engine = await variant.create(target, 'default', input.libs);
  result.importMs = performance.now() - started;
  const seen = new Seen();
  try {
    started = performance.now();
    try {
      await within(engine.start(), START_TIMEOUT_MS, 'start');
    } catch (error) {
      fail(error);
      return;
    }
    result.startMs = performance.now() - started;
    result.rssAddedBytes = (await settledRss()) - rssBefore;
    const after = await within(engine.query(OBJECTS_SQL), START_TIMEOUT_MS, 'count objects')
      .then((rows) => rows[0] as Objects)
      .catch(fail);
    if (after) {
      result.objects = {
        tables: after.tables - before.tables,
        indexes: after.indexes - before.indexes,
        functions: after.functions - before.functions,
      };
    }

    // N jobs one at a time with no worker running, then one worker drains them.
    const cpuBefore = process.cpuUsage();
    started = performance.now();
    try {
      await within(
        (async () => {
          for (let i = 0; i < input.jobs; i++) {
            await engine.enqueue(`drain-${i}`);
            result.enqueued++;
          }
        })(),
        ENQUEUE_TIMEOUT_MS,
        `enqueue ${input.jobs}`,
      );
      result.enqueuePerSecond = input.jobs / ((performance.now() - started) / 1000);
    } catch (error) {
      fail(error);
      return;
    }
    started = performance.now();
    try {
      await within(
        engine.work(async (id) => seen.record(id)),
        START_TIMEOUT_MS,
        'worker start',
      );
      result.workerStartMs = performance.now() - started;
      await within(seen.waitForCount(input.jobs), DRAIN_TIMEOUT_MS, `run ${input.jobs} jobs`).catch(
        (error: unknown) => {
          throw new Error(`${describe(error)}; ${engine.poolState?.() ?? ''}`);
        },
      );
      result.drainMs = performance.now() - started;
      const cpu = process.cpuUsage(cpuBefore);
      result.cpuMicrosPerJob = (cpu.user + cpu.system) / input.jobs;
      result.rssAfterJobsBytes = (await settledRss()) - rssBefore;
    } catch (error) {
      fail(error);
      return;
    } finally {
      result.drained = seen.count;
    }

    // One job at a time into an idle worker, at random moments against its polling.
    const pickups: number[] = [];
    for (let i = 0; i < input.pickups; i++) {
      await sleep(50 + Math.random() * 250);
      const id = `pickup-${i}`;
      const sent = performance.now();
      try {
        await within(
          engine.enqueue(id).then(() => seen.waitFor(id)),
          PICKUP_TIMEOUT_MS,
          'pickup',
        );
        pickups.push((seen.at.get(id) ?? Number.NaN) - sent);
      } catch (error) {
        result.pickupsMissed++;
        if (result.pickupsMissed === 1) fail(error);
        if (result.pickupsMissed >= 3) break; // it is not coming; do not spend the run on it
      }
    }
    if (pickups.length) result.pickup = summarize(pickups);

    // What an idle worker costs: polling, maintenance passes.
    const idleBefore = process.cpuUsage();
    await sleep(IDLE_MS);
    const idle = process.cpuUsage(idleBefore);
    result.idleCpuMsPerSecond = (idle.user + idle.system) / 1000 / (IDLE_MS / 1000);
  } finally {
    await within(engine.stop(), STOP_TIMEOUT_MS, 'stop').catch(fail);
  }
}

/**
 * A second process takes a job and is SIGKILLed while running it; a fresh worker here then
 * waits for the job to come round again. On the embedded engine the second process is
 * another client of the same socket: in Parley a crash there takes PGlite with it, and the
 * job then waits for the same expiry after the restart.
 */
async function killedWorker(
  input: CaseInput,
  target: Target,
  mode: Mode,
  waitSeconds: number,
): Promise<KillResult> {
  const variant = VARIANTS[input.variant];
  if (!variant) throw new Error('no variant');
  const kill: KillInput = { kill: { variant: input.variant, mode, target, libs: input.libs } };
  const child = spawn(process.execPath, [import.meta.filename, JSON.stringify(kill)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let dead: JobInfo;
  try {
    dead = await within(
      startedLine(child),
      START_TIMEOUT_MS,
      'the worker to be killed never took its job',
    );
  } finally {
    child.kill('SIGKILL');
    if (child.exitCode === null && child.signalCode === null) await once(child, 'exit');
  }
  const killedAt = performance.now();
  const engine = await variant.create(target, mode, input.libs);
  try {
    const seen = new Seen();
    await within(engine.start(), START_TIMEOUT_MS, 'start after the kill');
    await within(
      engine.work(async (id) => seen.record(id)),
      START_TIMEOUT_MS,
      'worker start after the kill',
    );
    await engine.recover?.(dead);
    const ran = await within(seen.waitFor(KILL_ID), waitSeconds * 1000, 'rerun').then(
      () => true,
      (error: unknown) => {
        if (error instanceof Timeout) return false;
        throw error;
      },
    );
    const at = seen.at.get(KILL_ID);
    return ran && at !== undefined
      ? { seconds: (at - killedAt) / 1000, note: 'ran again' }
      : { note: `not within ${waitSeconds} s` };
  } finally {
    await within(engine.stop(), STOP_TIMEOUT_MS, 'stop').catch(() => {});
  }
}

async function startedLine(child: ChildProcess): Promise<JobInfo> {
  if (!child.stdout) throw new Error('no stdout');
  for await (const line of createInterface({ input: child.stdout })) {
    const match = /^started (.*)$/.exec(line);
    if (match) return JSON.parse(match[1] as string) as JobInfo;
  }
  throw new Error(`the worker to be killed exited (${child.exitCode}) before taking the job`);
}

/** The worker that gets killed: it takes its own job and never finishes it. */
async function runKilled({ kill }: KillInput): Promise<void> {
  const variant = VARIANTS[kill.variant];
  if (!variant) throw new Error('no variant');
  const engine = await variant.create(kill.target, kill.mode, kill.libs);
  await engine.start();
  await engine.enqueue(KILL_ID);
  await engine.work(async (id, info) => {
    if (id !== KILL_ID) return;
    process.stdout.write(`started ${JSON.stringify(info)}\n`);
    await new Promise(() => {}); // mid-job until SIGKILL
  });
}

const input = JSON.parse(process.argv[2] ?? '{}') as CaseInput | KillInput;
if ('kill' in input) {
  await runKilled(input);
} else {
  const result = await runCase(input);
  process.stdout.write(`RESULT ${JSON.stringify(result)}\n`);
  process.exit(0); // a library's leftover timers must not keep the case alive
}
