import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backfillEnv } from '../support/backfill-env.ts';
import { type EngineSetup, engineSetup } from '../support/engine-setup.ts';
import { embedText } from '../support/fake-llm/embeddings.ts';
import type { FakeLlmServer } from '../support/fake-llm-server.ts';
import { file, ingest } from '../support/ingest-client.ts';
import { makePdf } from '../support/make-pdf.ts';
import { type LogLine, type RunningParley, startParley } from '../support/start-parley.ts';
import { waitFor } from '../support/wait-for.ts';

/**
 * Replicas on one PostgreSQL database duplicate nothing, the embedding backfill included: as
 * an operator sees it, the model server is asked for each chunk's text once in all, however
 * many processes share the database and whichever of them the documents were uploaded to.
 * Two replicas, the second with PARLEY_WORKERS=2: three processes running the backfill.
 *
 * - Documents uploaded to every process at about the same time, in batches of two texts that
 *   the fake model answers after a delay (so that batches would overlap in time if two
 *   processes took the same texts): once every chunk has its vector, each text was asked once.
 * - The model changes dimension while Parley is stopped, and every process starts at the same
 *   moment: every text is re-embedded, each asked once at the new dimension.
 *
 * Each process may ask the model for one vector of the text "dimension" at a sweep, to learn
 * the dimension it gives now (embedding-job.ts, learnDimension): that probe is no chunk's
 * text, and it is left out of the count (at most one a process).
 */
const MODEL = 'fake-embed';
const BATCH = 2;
const DELAY_MS = 150;
const PROBE = 'dimension';
const FIRST_DIMENSION = 384;
const NEXT_DIMENSION = 256;
/** Starting took over 60 s while this machine was shared; a wait, not a speed check. */
const START_TIMEOUT_MS = 180_000;

/** Six PDFs of three pages of distinct lines: about six chunks each at 32 tokens. */
function reports(): Uint8Array[] {
  const birds = ['heron', 'plover', 'curlew', 'avocet', 'dunlin', 'godwit'];
  return Array.from({ length: 6 }, (_, report) =>
    makePdf(
      Array.from({ length: 3 }, (_, page) => ({
        text: Array.from({ length: 4 }, (_, line) => {
          const n = report * 100 + page * 10 + line;
          return `Report ${report} page ${page} line ${line}: the ${birds[n % 6]} counted ${n * 37} reeds near mill ${n}.`;
        }),
      })),
    ),
  );
}

const listening = (line: LogLine) => line.msg === 'Parley is listening';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('the embedding backfill of replicas on one PostgreSQL database', () => {
  let setup: EngineSetup;
  let llm: FakeLlmServer;
  let database: pg.Client;
  let replicas: RunningParley[] = [];
  /** The dimension the fake model gives now (the operator may serve another model). */
  let dimension = FIRST_DIMENSION;

  const env = (extra: Record<string, string> = {}) => ({
    ...setup.env,
    ...backfillEnv(llm.url, MODEL, BATCH),
    ...extra,
  });

  /** Both replicas at the same moment; resolves once each of the three processes listens. */
  async function startAll(): Promise<void> {
    const started = await Promise.allSettled([
      startParley({ env: env(), startTimeoutMs: START_TIMEOUT_MS }),
      startParley({ env: env({ PARLEY_WORKERS: '2' }), startTimeoutMs: START_TIMEOUT_MS }),
    ]);
    replicas = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
    const failed = started.find((s) => s.status === 'rejected');
    if (failed) throw failed.reason;
    const workers = replicas[1] as RunningParley;
    const first = workers.logs.find(listening)?.pid;
    await workers.waitForLog((line) => listening(line) && line.pid !== first, START_TIMEOUT_MS);
  }

  async function stopAll(): Promise<void> {
    await Promise.all(replicas.map((replica) => replica.stop()));
    replicas = [];
  }

  /** The distinct chunk texts stored, and how many have a vector of `dims` for the model. */
  async function stored(dims: number): Promise<{ texts: string[]; vectors: number }> {
    const { rows } = await database.query<{ content: string }>(
      'SELECT DISTINCT content FROM chunks',
    );
    // The vectors' table is made at the backfill's first sweep that finds chunks.
    const table = await database.query("SELECT to_regclass('chunk_embeddings') AS t");
    if (table.rows[0]?.t === null) return { texts: rows.map((r) => r.content), vectors: 0 };
    const counted = await database.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM chunk_embeddings e
        WHERE e.model = $1 AND e.embedding IS NOT NULL AND vector_dims(e.embedding) = $2
          AND EXISTS (SELECT 1 FROM chunks c WHERE c.content_hash = e.content_hash)`,
      [`openai:${MODEL}`, dims],
    );
    return { texts: rows.map((r) => r.content), vectors: counted.rows[0]?.n ?? 0 };
  }

  /** Waits until every stored chunk text has a vector of `dims`; answers the texts. */
  async function everyTextEmbedded(dims: number): Promise<string[]> {
    let texts: string[] = [];
    await waitFor(async () => {
      const now = await stored(dims);
      texts = now.texts;
      return texts.length > 0 && now.vectors === texts.length;
    }, 60_000);
    return texts;
  }

  /**
   * Waits until no embeddings request is under way and none came for a while: a process that
   * had taken texts another one embedded meanwhile would still be asking for them.
   */
  async function modelQuiet(quietMs = 2_000): Promise<void> {
    let seen = -1;
    let since = Date.now();
    await waitFor(async () => {
      const calls = llm.embeddingsCalls;
      if (calls.length !== seen || calls.some((call) => call.outcome === 'pending')) {
        seen = calls.length;
        since = Date.now();
      }
      await sleep(100);
      return Date.now() - since >= quietMs;
    }, 30_000);
  }

  /** Each text asked for since call `from`, probes left out, with how many times. */
  function askedSince(from: number): { texts: Map<string, number>; probes: number } {
    const texts = new Map<string, number>();
    let probes = 0;
    for (const call of llm.embeddingsCalls.slice(from)) {
      if (call.input.length === 1 && call.input[0] === PROBE) {
        probes++;
        continue;
      }
      for (const text of call.input) texts.set(text, (texts.get(text) ?? 0) + 1);
    }
    return { texts, probes };
  }

  const askedMoreThanOnce = (texts: Map<string, number>) =>
    [...texts].filter(([, times]) => times > 1);

  beforeAll(async () => {
    setup = await engineSetup(
      'server',
      {},
      { embed: (text) => embedText(text, dimension), models: ['fake-chat', MODEL] },
    );
    llm = setup.llm;
    database = new pg.Client({ connectionString: setup.env.DATABASE_URL });
    await database.connect();
    await startAll();
  }, START_TIMEOUT_MS + 60_000);

  afterAll(async () => {
    await Promise.allSettled(replicas.map((replica) => replica.stop('SIGKILL')));
    await database?.end();
    await setup?.cleanup();
  });

  it('asks the model for each text once in all, documents uploaded to every process at once', async () => {
    llm.delayEmbeddings(DELAY_MS);
    const [a, b] = replicas as [RunningParley, RunningParley];
    const pdfs = reports();
    // The second replica's port is served by its two workers: each upload lands on either.
    const uploads = [a, b, b, a, b, b].map((replica, i) =>
      ingest(replica, [file(`report-${i}.pdf`, pdfs[i] as Uint8Array)]),
    );
    let chunks = 0;
    for (const answer of await Promise.all(uploads)) {
      expect(answer.status).toBe(200);
      chunks += answer.body.chunks ?? 0;
    }
    // Many batches: enough for processes to take the same texts, were anything shared.
    expect(chunks / BATCH).toBeGreaterThanOrEqual(12);

    const texts = await everyTextEmbedded(FIRST_DIMENSION);
    await modelQuiet();
    const asked = askedSince(0);
    expect(askedMoreThanOnce(asked.texts)).toEqual([]);
    expect(new Set(asked.texts.keys())).toEqual(new Set(texts));
    expect(asked.probes).toBeLessThanOrEqual(3);
    llm.assertNoUnexpected();
  }, 120_000);

  it('re-embeds each text once in all when every process starts after a change of dimension', async () => {
    await stopAll();
    dimension = NEXT_DIMENSION; // another model, served under the same name
    llm.delayEmbeddings(DELAY_MS);
    const from = llm.embeddingsCalls.length;
    await startAll();

    const texts = await everyTextEmbedded(NEXT_DIMENSION);
    await modelQuiet();
    const asked = askedSince(from);
    expect(askedMoreThanOnce(asked.texts)).toEqual([]);
    expect(new Set(asked.texts.keys())).toEqual(new Set(texts));
    expect(asked.probes).toBeLessThanOrEqual(3);
    // It was the change of dimension that had them embedded again.
    const warned = replicas
      .flatMap((replica) => replica.logs)
      .find((line) => line.msg.includes('now gives vectors of another dimension'));
    expect(warned).toMatchObject({ from: FIRST_DIMENSION, to: NEXT_DIMENSION });
    llm.assertNoUnexpected();
  }, 120_000);
});
