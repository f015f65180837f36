import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/storage/database.ts';
import { HIDDEN } from '../../src/storage/hidden-documents.ts';
import { indexInconsistencies, openDocumentService } from '../support/document-store.ts';
import { type EngineSetup, engineSetup } from '../support/engine-setup.ts';
import { ENGINES } from '../support/engines.ts';
import { startParley } from '../support/start-parley.ts';

/**
 * A large upload is written a batch at a time under a hidden document row
 * (src/storage/hidden-documents.ts). A process killed in the middle leaves that row and its
 * chunks behind, invisible to everyone but taking space. Parley removes such rows once they are
 * an hour old (younger ones may be another replica's upload under way), at start and every
 * hour, not only when some later large upload happens to run.
 */
describe.each(ENGINES)('uploads cut short by a kill on the %s engine', (engine) => {
  let setup: EngineSetup;
  const target = () => ({ dataDir: setup.dataDir, databaseUrl: setup.env.DATABASE_URL });

  beforeAll(async () => {
    setup = await engineSetup(engine);
  });
  afterAll(async () => {
    await setup?.cleanup();
  });

  /** Ingests large documents in a child process and kills it in the middle of one. */
  async function killMidUpload(): Promise<void> {
    const child = spawn(
      process.execPath,
      [
        join(import.meta.dirname, '../support/ingest-child.ts'),
        setup.dataDir,
        setup.env.DATABASE_URL ?? '',
      ].filter(Boolean),
      {
        stdio: ['ignore', 'pipe', 'inherit'],
        // Many small transactions: the write is most of a document's time, whatever the load.
        env: { ...process.env, INGEST_BATCH_CHUNKS: '8' },
      },
    );
    const lines = createInterface({ input: child.stdout });
    // Killed half-way through the third document, timed by how long the second one took.
    await new Promise<void>((resolve) => {
      let second = 0;
      lines.on('line', (line) => {
        if (/^stored 0 /.test(line)) second = performance.now();
        if (/^stored 1 /.test(line)) setTimeout(resolve, (performance.now() - second) / 2);
      });
    });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  }

  async function withDatabase<T>(work: (database: Database) => Promise<T>): Promise<T> {
    const { database } = await openDocumentService(target());
    try {
      return await work(database);
    } finally {
      await database.close();
    }
  }

  const leftovers = (database: Database) =>
    database.db.$client
      .query<{ documents: string; chunks: string }>(
        `SELECT (SELECT count(*) FROM documents WHERE kind = $1) AS documents,
                (SELECT count(*) FROM chunks c JOIN documents d ON d.id = c.document_id
                  WHERE d.kind = $1) AS chunks`,
        [HIDDEN],
      )
      .then(({ rows }) => ({
        documents: Number(rows[0]?.documents),
        chunks: Number(rows[0]?.chunks),
      }));

  it('removes what a killed upload left once it is an hour old, and keeps a younger one', async () => {
    // The kill lands in a document's write almost always; tried again if not.
    let left = { documents: 0, chunks: 0 };
    for (let attempt = 0; attempt < 5 && left.chunks === 0; attempt++) {
      await killMidUpload();
      left = await withDatabase(leftovers);
    }
    expect(left.chunks).toBeGreaterThan(0);

    // Started at once: the row may be an upload of another replica still under way; kept.
    let parley = await startParley({ dataDir: setup.dataDir, env: setup.env });
    expect((await parley.fetch('/health')).status).toBe(200);
    await parley.settled(1_000);
    await parley.stop();
    expect(parley.logs.some((line) => line.msg === 'abandoned uploads removed')).toBe(false);
    expect(await withDatabase(leftovers)).toEqual(left);

    // An hour later (the rows aged as the clock would age them), the next start removes them.
    await withDatabase((database) =>
      database.db.$client.query(
        `UPDATE documents SET created_at = created_at - interval '2 hours' WHERE kind = $1`,
        [HIDDEN],
      ),
    );
    parley = await startParley({ dataDir: setup.dataDir, env: setup.env });
    const removed = await parley.waitForLog((line) => line.msg === 'abandoned uploads removed');
    expect(removed.documents).toBe(left.documents);
    await parley.stop();
    await withDatabase(async (database) => {
      expect(await leftovers(database)).toEqual({ documents: 0, chunks: 0 });
      expect(await indexInconsistencies(database)).toEqual([]);
      // The documents stored whole before the kill are still there.
      const { rows } = await database.db.$client.query<{ n: string }>(
        `SELECT count(*) AS n FROM documents WHERE source LIKE 'crash/%'`,
      );
      expect(Number(rows[0]?.n)).toBeGreaterThanOrEqual(1);
    });
  }, 180_000);
});
