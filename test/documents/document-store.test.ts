import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DocumentService } from '../../src/documents/document-service.ts';
import type { Database } from '../../src/storage/database.ts';
import {
  indexInconsistencies,
  openDocumentService,
  textDocument,
} from '../support/document-store.ts';
import { ENGINES, type EngineEnv, engineEnv } from '../support/engines.ts';

/** `n` paragraphs of ~50 tokens: one chunk each at the 64-token chunks used here. */
const version = (tag: string, n: number, keyword = 'shared') =>
  Array.from(
    { length: n },
    (_, i) =>
      `Release notes ${tag} item ${i}: the ${keyword} keyword. ${'Padding words make this paragraph long enough to fill most of one chunk. '.repeat(2)}`,
  );

/** Ingestion as the ingestion route calls it, on a real database of each engine. */
describe.each(ENGINES)('the document store on the %s engine', (engine) => {
  let storage: EngineEnv;
  let dataDir: string;
  let service: DocumentService;
  let database: Database;
  const target = () => ({ dataDir, databaseUrl: storage.env.DATABASE_URL });
  const versionsFound = async (query: string) => {
    const { hits } = await service.search(query, { limit: 50 });
    return new Set(hits.map((hit) => /Release notes (\w+)/.exec(hit.content)?.[1]));
  };

  beforeAll(async () => {
    storage = await engineEnv(engine);
    dataDir = mkdtempSync(join(tmpdir(), 'parley-docstore-'));
    ({ service, database } = await openDocumentService(target()));
    // Opening the embedded engine (and migrating) takes long on a loaded machine.
  }, 120_000);
  afterAll(async () => {
    await database?.close();
    await storage?.cleanup();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('answers ingest with the number of chunks, one per short paragraph here', async () => {
    expect(await service.ingest(textDocument('notes/a.txt', version('first', 3)))).toEqual({
      chunks: 3,
    });
    expect((await service.listSources()).sources).toContain('notes/a.txt');
  });

  it('refuses a document without text, storing nothing', async () => {
    await expect(service.ingest(textDocument('empty.txt', ['  ', '']))).rejects.toMatchObject({
      code: 'no_text',
      status: 422,
    });
    expect((await service.listSources()).sources).not.toContain('empty.txt');
  });

  it('replaces a source atomically: a concurrent search sees the old or the new set', async () => {
    await service.ingest(textDocument('release.txt', version('old', 40, 'atomic')));
    let done = false;
    const replacing = service
      .ingest(textDocument('release.txt', version('new', 400, 'atomic')))
      .finally(() => {
        done = true;
      });
    const seen: string[] = [];
    while (!done) {
      const versions = await versionsFound('atomic');
      // Never both, never neither.
      expect(versions.size).toBe(1);
      seen.push([...versions][0] as string);
    }
    await replacing;
    expect([...(await versionsFound('atomic'))]).toEqual(['new']);
    expect(seen.length).toBeGreaterThan(0);
    expect(await indexInconsistencies(database)).toEqual([]);
  });

  it('ends two simultaneous ingests of one source with exactly one of them', async () => {
    const [a, b] = await Promise.all([
      service.ingest(textDocument('twice.txt', version('alpha', 30, 'twice'))),
      service.ingest(textDocument('twice.txt', version('beta', 20, 'twice'))),
    ]);
    expect([a.chunks, b.chunks]).toEqual([30, 20]);
    const versions = await versionsFound('twice');
    expect(versions.size).toBe(1);
    const winner = [...versions][0];
    const { rows } = await database.db.$client.query<{ chunk_count: number; n: string }>(
      `SELECT d.chunk_count, (SELECT count(*) FROM chunks c WHERE c.document_id = d.id) AS n
       FROM documents d WHERE d.source = 'twice.txt'`,
    );
    expect(rows).toEqual([
      { chunk_count: winner === 'alpha' ? 30 : 20, n: String(winner === 'alpha' ? 30 : 20) },
    ]);
    expect(await indexInconsistencies(database)).toEqual([]);
  });

  it('stores nothing from an ingestion aborted before it was stored', async () => {
    const controller = new AbortController();
    controller.abort();
    await expect(
      service.ingest(
        textDocument('release.txt', version('aborted', 50, 'atomic')),
        controller.signal,
      ),
    ).rejects.toThrow();
    expect([...(await versionsFound('atomic'))]).toEqual(['new']);
  });

  it('keeps the statistics right after deletions', async () => {
    await service.deleteSource('release.txt');
    await expect(service.deleteSource('release.txt')).rejects.toMatchObject({ status: 404 });
    expect(await versionsFound('atomic')).not.toContain('new');
    expect((await service.search('new', { limit: 5 })).hits).toEqual([]);
    expect(await indexInconsistencies(database)).toEqual([]);
  });

  // test/scale-out/replica-documents.test.ts races these through two replicas of a server; in
  // one process the embedded engine's one session interleaves the two by transaction instead.
  it('leaves a source whole or gone when an upload races its deletion, never in part', async () => {
    // 20 chunks are written in one transaction, 200 a batch a transaction under a hidden row.
    const rounds = [20, 200].flatMap((chunks) =>
      [0, 5, 20].map((delayMs) => ({ chunks, delayMs })),
    );
    for (const [round, { chunks, delayMs }] of rounds.entries()) {
      const source = `raced-${round}.txt`;
      await service.ingest(textDocument(source, version('older', 10, 'raced')));
      const [upload, deletion] = await Promise.allSettled([
        service.ingest(textDocument(source, version('newer', chunks, 'raced'))),
        new Promise((resolve) => setTimeout(resolve, delayMs)).then(() =>
          service.deleteSource(source),
        ),
      ]);
      expect(upload).toEqual({ status: 'fulfilled', value: { chunks } });
      if (deletion.status === 'rejected') expect(deletion.reason).toMatchObject({ status: 404 });
      const { rows } = await database.db.$client.query<{ chunk_count: number; contents: string[] }>(
        `SELECT d.chunk_count,
                coalesce((SELECT array_agg(c.content) FROM chunks c WHERE c.document_id = d.id), '{}')
                  AS contents
         FROM documents d WHERE d.source = $1`,
        [source],
      );
      // Gone, or the newer version whole (it came after the older one): never a part or a mix.
      if (rows.length > 0) {
        expect(rows).toHaveLength(1);
        expect(rows[0]?.chunk_count).toBe(chunks);
        expect(rows[0]?.contents).toHaveLength(chunks);
        expect(rows[0]?.contents.every((c) => c.includes('Release notes newer'))).toBe(true);
      }
      expect(
        (await service.listSources()).sources.filter((listed) => listed === source),
      ).toHaveLength(rows.length);
    }
    expect(await indexInconsistencies(database)).toEqual([]);
    // Nothing hidden is left behind (a version staged for the batches, or one replaced).
    const { rows } = await database.db.$client.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM documents WHERE kind = 'hidden'`,
    );
    expect(rows).toEqual([{ n: 0 }]);
  });

  it('leaves no partial document when the process is killed mid-ingest', async () => {
    await database.close();
    const child = spawn(
      process.execPath,
      [
        join(import.meta.dirname, '../support/ingest-child.ts'),
        dataDir,
        storage.env.DATABASE_URL ?? '',
      ].filter(Boolean),
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const lines = createInterface({ input: child.stdout });
    // Let it finish a couple of documents, then kill it in the middle of the next.
    const complete = await new Promise<number>((resolve) => {
      lines.on('line', (line) => {
        const [, n, chunks] = /^stored (\d+) chunks=(\d+)$/.exec(line) ?? [];
        if (n === '1') setTimeout(() => resolve(Number(chunks)), 150);
      });
    });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;

    ({ service, database } = await openDocumentService(target()));
    expect(await indexInconsistencies(database)).toEqual([]);
    const { rows } = await database.db.$client.query<{ source: string; chunk_count: number }>(
      `SELECT source, chunk_count FROM documents WHERE source LIKE 'crash/%' ORDER BY source`,
    );
    expect(rows.length).toBeGreaterThanOrEqual(2);
    for (const row of rows) expect(row.chunk_count).toBe(complete);
  }, 120_000);
});
