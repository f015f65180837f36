import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterEach, describe, expect, it } from 'vitest';
import { HIDDEN } from '../../src/storage/hidden-documents.ts';
import { openDocumentService } from '../support/document-store.ts';
import { type EngineSetup, engineSetup } from '../support/engine-setup.ts';
import { ENGINES } from '../support/engines.ts';
import { file, ingest } from '../support/ingest-client.ts';
import { newVersion } from '../support/replace-child.ts';
import { searchThroughChat } from '../support/search-through-chat.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';

/** SEARCH_TOP_K's default: the passages search_documents returns. */
const TOP_K = 5;

/** Hidden chunks the killed write must leave: more than either ranking's candidates (50). */
const HIDDEN_AT_LEAST = 60;

const EMBEDDINGS = {
  EMBEDDINGS_PROVIDER: 'openai',
  EMBEDDINGS_MODEL: 'fake-embedder',
  EMBEDDINGS_MAX_RETRIES: '0',
};

/**
 * A large new version of a source is written a batch at a time under a hidden document row
 * (src/storage/hidden-documents.ts) and made visible at the end. Until then a search sees the
 * old version, whole: before the fix the hidden chunks, when they ranked best, took the places
 * of visible ones (left out only after the limit), and a search returned fewer hits, or none.
 * A write killed half-way leaves the hidden rows as they are mid-write (for an hour), so the
 * test freezes the window that way and searches the way a user does, through the chat.
 */
describe.each(ENGINES)('searching while a large version is written on the %s engine', (engine) => {
  let setup: EngineSetup;

  afterEach(async () => {
    await setup?.cleanup();
  });

  /**
   * Kills a process writing a large new version `delayMs` after the write began.
   * Resolves false when the new version was stored first.
   */
  async function killMidReplacement(delayMs: number): Promise<boolean> {
    const child = spawn(
      process.execPath,
      [
        join(import.meta.dirname, '../support/replace-child.ts'),
        setup.dataDir,
        setup.env.DATABASE_URL ?? '',
      ].filter(Boolean),
      { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, INGEST_BATCH_CHUNKS: '1' } },
    );
    const lines = createInterface({ input: child.stdout });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    const killed = await new Promise<boolean>((resolve) => {
      lines.on('line', (line) => {
        if (line === 'writing') setTimeout(() => resolve(true), delayMs);
        if (line === 'new stored') resolve(false);
      });
    });
    child.kill('SIGKILL');
    await exited;
    return killed;
  }

  /**
   * Chunks of hidden document rows (what the killed write left), and chunks of the new version
   * that are visible: a write that ended before its kill (a fast machine, or the kill landing
   * just after the last commit) stored the new version, and the test must start again from the
   * old one.
   */
  async function chunkCounts(): Promise<{ hidden: number; newVisible: number }> {
    const { database } = await openDocumentService({
      dataDir: setup.dataDir,
      databaseUrl: setup.env.DATABASE_URL,
    });
    try {
      const { rows } = await database.db.$client.query<{ hidden: string; new_visible: string }>(
        `SELECT count(*) FILTER (WHERE d.kind = $1) AS hidden,
                count(*) FILTER (WHERE d.kind <> $1 AND c.content LIKE '%Lantern lantern note%')
                  AS new_visible
         FROM chunks c JOIN documents d ON d.id = c.document_id`,
        [HIDDEN],
      );
      return { hidden: Number(rows[0]?.hidden), newVisible: Number(rows[0]?.new_visible) };
    } finally {
      await database.close();
    }
  }

  it.each([
    { retrieval: 'lexical', env: {} },
    { retrieval: 'hybrid', env: EMBEDDINGS },
  ] as const)(
    '$retrieval: returns the old version whole until the new one is stored, then the new one',
    async ({ retrieval, env }) => {
      setup = await engineSetup(engine, env);
      const start = () =>
        startParley({
          dataDir: setup.dataDir,
          env: { ...setup.env, EMBEDDINGS_BASE_URL: setup.llm.url },
        });
      // Every chunk embedded, the hidden ones too (they will be visible once written).
      const embedded = (parley: RunningParley) =>
        retrieval === 'hybrid'
          ? parley.waitForLog((line) => line.msg === 'chunks embedded')
          : Promise.resolve();

      let parley = await start();
      const oldVersion = Array.from(
        { length: 60 },
        (_, i) =>
          `Section ${i} of the old handbook covers opening hours, the lantern by the gate, ` +
          `the keys to the shed and who waters the garden in summer (old section ${i}).`,
      ).join('\n\n');
      expect((await ingest(parley, [file('handbook.txt', oldVersion)])).status).toBe(200);
      await embedded(parley);
      const before = await searchThroughChat(parley, setup.llm, 'lantern');
      await parley.stop();
      expect(before.retrieval).toBe(retrieval);
      expect(before.hits).toHaveLength(TOP_K);
      for (const hit of before.hits) expect(hit.text).toMatch(/old section \d+/);

      // Killed while the new version is part written, whatever the machine's speed: a search
      // meanwhile has more hidden chunks than candidates, each ranking above every old one.
      // A write that ended first stored the new version: the old one is put back as a user
      // would, and the next write is killed sooner.
      const putOldVersionBack = async () => {
        const again = await start();
        try {
          expect((await ingest(again, [file('handbook.txt', oldVersion)])).status).toBe(200);
        } finally {
          await again.stop();
        }
      };
      let counts = { hidden: 0, newVisible: 0 };
      for (let attempt = 0, delayMs = 200; attempt < 10; attempt++) {
        const killed = await killMidReplacement(delayMs);
        counts = await chunkCounts();
        if (counts.newVisible > 0) {
          await putOldVersionBack();
          counts = await chunkCounts();
          delayMs /= 4;
        } else if (killed && counts.hidden < HIDDEN_AT_LEAST) delayMs *= 2;
        if (counts.hidden >= HIDDEN_AT_LEAST && counts.newVisible === 0) break;
      }
      expect(counts.newVisible).toBe(0);
      expect(counts.hidden).toBeGreaterThanOrEqual(HIDDEN_AT_LEAST);

      parley = await start();
      try {
        await embedded(parley);
        // The very hits, scores included, the old version gave before the write began.
        expect(await searchThroughChat(parley, setup.llm, 'lantern')).toEqual(before);

        const text = newVersion().join('\n\n');
        expect((await ingest(parley, [file('handbook.txt', text)])).status).toBe(200);
        const after = await searchThroughChat(parley, setup.llm, 'lantern');
        expect(after.hits).toHaveLength(TOP_K);
        for (const hit of after.hits) {
          expect(hit.source).toBe('handbook.txt');
          expect(hit.text).toMatch(/Lantern lantern note/);
        }
      } finally {
        await parley.stop();
      }
    },
    180_000,
  );
});
