import type { ChildProcess } from 'node:child_process';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.ts';
import { openDatabase } from '../../src/storage/database.ts';
import { backfillEnv } from '../support/backfill-env.ts';
import { type EngineSetup, engineSetup } from '../support/engine-setup.ts';
import { ENGINES } from '../support/engines.ts';
import type { FakeLlmServer } from '../support/fake-llm-server.ts';
import { file, ingest } from '../support/ingest-client.ts';
import { makePdf } from '../support/make-pdf.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';
import { waitFor } from '../support/wait-for.ts';

/**
 * Issue 30: a SIGTERM while the embedding backfill still has minutes of work must not hold
 * the process. As an operator sees it: the process exits 0 within SHUTDOWN_GRACE_MS and a few
 * seconds, the batch under way is told to stop at the grace period's end (its request to the
 * model server is abandoned), no batch starts after the signal, and the next start embeds
 * what is left: every chunk gets its vector, and no chunk's text is answered twice by the
 * model server. A second SIGTERM ends the grace period at once.
 *
 * The model server is the fake one, answering each embeddings request after SLOW_MS while the
 * backfill is to be interrupted (longer than the grace period, so the batch under way is still
 * waiting when the grace period ends), and at once after the restart.
 */
const GRACE_MS = 1_000;
/** What "a few seconds" after the grace period may take on a busy two-core machine. */
const EXIT_MARGIN_MS = 4_000;
const SLOW_MS = 3_000;
const BATCH = 2;
const MODEL = 'fake-embed';

/** Twelve PDFs of five pages of distinct lines: about ten chunks each at 32 tokens. */
function reports(): Uint8Array[] {
  const birds = ['heron', 'plover', 'curlew', 'avocet', 'dunlin', 'godwit'];
  return Array.from({ length: 12 }, (_, report) =>
    makePdf(
      Array.from({ length: 5 }, (_, page) => ({
        text: Array.from({ length: 4 }, (_, line) => {
          const n = report * 100 + page * 10 + line;
          return `Report ${report} page ${page} line ${line}: the ${birds[n % 6]} counted ${n * 37} reeds near mill ${n}.`;
        }),
      })),
    ),
  );
}

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  ms: number;
  /** Still running at the limit: killed (SIGKILL) by the test. */
  killed: boolean;
}

/** Sends `signal` and waits up to `limitMs` for the process to exit; kills it after that. */
function exitAfter(child: ChildProcess, signal: NodeJS.Signals, limitMs: number): Promise<Exit> {
  const started = performance.now();
  return new Promise((resolve) => {
    let killed = false;
    const timer = setTimeout(() => {
      killed = true;
      child.kill('SIGKILL');
    }, limitMs);
    child.once('exit', (code, exitSignal) => {
      clearTimeout(timer);
      resolve({ code, signal: exitSignal, ms: Math.round(performance.now() - started), killed });
    });
    child.kill(signal);
  });
}

describe.each(ENGINES)('a SIGTERM during the embedding backfill, on the %s engine', (engine) => {
  let setup: EngineSetup;
  let llm: FakeLlmServer;
  let dataDir: string;
  const running: RunningParley[] = [];
  const env = (extra: Record<string, string> = {}) => ({
    ...setup.env,
    ...backfillEnv(llm.url, MODEL, BATCH),
    SHUTDOWN_GRACE_MS: String(GRACE_MS),
    ...extra,
  });
  const start = async (extra?: Record<string, string>) => {
    const parley = await startParley({ dataDir, env: env(extra) });
    running.push(parley);
    return parley;
  };
  const inFlight = () => llm.embeddingsCalls.filter((call) => call.outcome === 'pending');
  const answered = () => llm.embeddingsCalls.filter((call) => call.outcome === 'answered');
  const messages = (parley: RunningParley) => parley.logs.map((line) => line.msg);
  /** How the last embeddings request ended, once the fake has seen its connection close. */
  const lastCallOutcome = async () => {
    await waitFor(() => llm.embeddingsCalls.at(-1)?.outcome !== 'pending', 5_000);
    return llm.embeddingsCalls.at(-1)?.outcome;
  };

  /** Read once every process has stopped (the embedded engine's data is locked while one runs). */
  const vectorCounts = async () => {
    const database = await openDatabase(
      parseConfig({ DATA_DIR: dataDir, DATABASE_URL: setup.env.DATABASE_URL, DB_POOL_MAX: '1' }),
      pino({ level: 'silent' }),
    );
    try {
      const { rows } = await database.db.$client.query<{ texts: number; vectors: number }>(
        `SELECT (SELECT count(DISTINCT content_hash)::int FROM chunks) AS texts,
                (SELECT count(*)::int FROM chunk_embeddings e
                  WHERE e.model = $1
                    AND EXISTS (SELECT 1 FROM chunks c WHERE c.content_hash = e.content_hash))
                  AS vectors`,
        [`openai:${MODEL}`],
      );
      return rows[0];
    } finally {
      await database.close();
    }
  };

  beforeEach(async () => {
    setup = await engineSetup(engine);
    ({ llm, dataDir } = setup);
  });
  afterEach(async () => {
    for (const parley of running.splice(0)) {
      if (parley.process.exitCode === null && parley.process.signalCode === null) {
        await parley.stop('SIGKILL');
      }
    }
    await setup?.cleanup();
  });

  it('exits within the grace period and a few seconds; the next start embeds every chunk exactly once', async () => {
    llm.delayEmbeddings(SLOW_MS);
    const parley = await start();
    let chunks = 0;
    for (const [i, pdf] of reports().entries()) {
      const answer = await ingest(parley, [file(`report-${i}.pdf`, pdf)]);
      expect(answer.status).toBe(200);
      chunks += answer.body.chunks ?? 0;
    }
    // Minutes of embedding work at this pace.
    expect((chunks / BATCH) * SLOW_MS).toBeGreaterThan(120_000);
    // Mid-backfill: two batches embedded, the third waiting for its answer.
    await waitFor(() => answered().length >= 2 && inFlight().length === 1, 30_000);
    const callsAtSignal = llm.embeddingsCalls.length;

    const exit = await exitAfter(parley.process, 'SIGTERM', GRACE_MS + 10_000);
    expect(exit, `exit ${exit.ms} ms after SIGTERM`).toMatchObject({ code: 0, killed: false });
    // The batch under way had the grace period to finish; then it was told to stop (its
    // request abandoned), and no batch began after the signal.
    expect(exit.ms).toBeGreaterThanOrEqual(GRACE_MS);
    expect(exit.ms).toBeLessThan(GRACE_MS + EXIT_MARGIN_MS);
    expect(messages(parley)).toContain('stopped');
    expect(await lastCallOutcome()).toBe('client-closed');
    expect(llm.embeddingsCalls).toHaveLength(callsAtSignal);

    // The next start finds the chunks without vectors, and embeds them (quickly now).
    llm.delayEmbeddings(0);
    const next = await start();
    await next.waitForLog((line) => line.msg === 'chunks embedded', 60_000);
    expect(await next.stop()).toBe(0);

    const counts = await vectorCounts();
    expect(counts?.texts).toBeGreaterThan(0);
    expect(counts?.vectors).toBe(counts?.texts);
    // The model server answered each chunk's text once: the abandoned batch was asked for
    // again, and none of the batches answered before the signal was.
    const texts = answered().flatMap((call) => call.input);
    expect(new Set(texts).size).toBe(texts.length);
    expect(texts).toHaveLength(counts?.texts ?? -1);
    llm.assertNoUnexpected();
  }, 180_000);

  it('ends the grace period at once on a second SIGTERM, and still stops cleanly', async () => {
    // A grace period and a model server answer far longer than the test.
    llm.delayEmbeddings(120_000);
    const parley = await start({ SHUTDOWN_GRACE_MS: '120000' });
    const [pdf] = reports();
    expect((await ingest(parley, [file('report.pdf', pdf as Uint8Array)])).status).toBe(200);
    await waitFor(() => inFlight().length === 1, 30_000);

    parley.process.kill('SIGTERM');
    await parley.waitForLog((line) => line.msg === 'shutting down');
    const exit = await exitAfter(parley.process, 'SIGTERM', 15_000);
    expect(exit, `exit ${exit.ms} ms after the second SIGTERM`).toMatchObject({
      code: 0,
      killed: false,
    });
    expect(exit.ms).toBeLessThan(EXIT_MARGIN_MS);
    expect(messages(parley)).toContain('stopped');
    expect(await lastCallOutcome()).toBe('client-closed');
    llm.assertNoUnexpected();
  });
});
