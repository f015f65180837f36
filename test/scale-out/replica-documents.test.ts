import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ReplicaStack, startReplicas } from '../support/chat-stack.ts';
import { file, ingest, listedSources } from '../support/ingest-client.ts';
import type { RunningParley } from '../support/start-parley.ts';

/** Starting Parley took over 60 s while this machine was shared; a wait, not a speed check. */
const START_TIMEOUT_MS = 300_000;
const ROUNDS = 4;

/** A document of `paragraphs` paragraphs, every sentence naming its version. */
function version(name: string, paragraphs: number): string {
  return Array.from(
    { length: paragraphs },
    (_, i) =>
      `Paragraph ${i + 1} of the ${name} edition. ${`The ${name} quarterly figures are described at length here. `.repeat(30)}`,
  ).join('\n\n');
}

function replicaPair(stack: ReplicaStack): [RunningParley, RunningParley] {
  const [a, b] = stack.replicas;
  if (!a || !b) throw new Error('two replicas are needed');
  return [a, b];
}

interface SourceState {
  documents: number;
  chunks: { content: string }[];
  chunkCount: number | undefined;
}

/**
 * Uploads and deletions of one source through two replicas at once: the database must end
 * with one whole version or none, and the lexical index's statistics must agree with the
 * chunks they count (they are shared rows every write updates).
 */
describe('one source written through two replicas at once', () => {
  let stack: ReplicaStack;
  let client: pg.Client;

  beforeAll(async () => {
    stack = await startReplicas(2);
    client = new pg.Client({ connectionString: stack.database.url });
    await client.connect();
  }, START_TIMEOUT_MS);
  afterAll(async () => {
    await client?.end();
    await stack?.stop();
  });

  async function state(source: string): Promise<SourceState> {
    const documents = await client.query<{ id: string; chunk_count: number }>(
      `SELECT id, chunk_count FROM documents WHERE owner = '' AND source = $1`,
      [source],
    );
    const chunks = await client.query<{ content: string }>(
      `SELECT c.content FROM chunks c JOIN documents d ON d.id = c.document_id
       WHERE d.owner = '' AND d.source = $1 ORDER BY c.chunk_index`,
      [source],
    );
    return {
      documents: documents.rowCount ?? 0,
      chunks: chunks.rows,
      chunkCount: documents.rows[0]?.chunk_count,
    };
  }

  /** The shared index statistics against what they count (none may drift). */
  async function expectIndexConsistent(): Promise<void> {
    const corpus = await client.query<{
      counted: string | null;
      chunks: string;
      terms: string | null;
      lengths: string | null;
    }>(
      `SELECT (SELECT chunks FROM corpus_stats WHERE owner = '') AS counted,
              (SELECT count(*) FROM chunks WHERE owner = '') AS chunks,
              (SELECT terms FROM corpus_stats WHERE owner = '') AS terms,
              (SELECT sum(term_count) FROM chunks WHERE owner = '') AS lengths`,
    );
    const row = corpus.rows[0];
    expect(Number(row?.counted ?? 0)).toBe(Number(row?.chunks));
    expect(Number(row?.terms ?? 0)).toBe(Number(row?.lengths ?? 0));
    const drift = await client.query(
      `SELECT s.term FROM term_stats s
       WHERE s.owner = '' AND s.df <> (SELECT count(*) FROM chunk_terms t WHERE t.owner = '' AND t.term = s.term)
       UNION ALL
       SELECT t.term FROM chunk_terms t WHERE t.owner = ''
         AND NOT EXISTS (SELECT 1 FROM term_stats s WHERE s.owner = '' AND s.term = t.term)
       LIMIT 5`,
    );
    expect(drift.rows).toEqual([]);
    const orphans = await client.query(
      `SELECT 1 FROM chunk_terms t WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.id = t.chunk_id) LIMIT 1`,
    );
    expect(orphans.rowCount).toBe(0);
  }

  it('two versions uploaded at the same moment end as one whole version', async () => {
    const [a, b] = replicaPair(stack);
    for (let round = 1; round <= ROUNDS; round++) {
      const source = `report-${round}.txt`;
      const [fromA, fromB] = await Promise.all([
        ingest(a, [file('report.txt', version('amber', 6)), { name: 'source', value: source }]),
        ingest(b, [file('report.txt', version('cobalt', 11)), { name: 'source', value: source }]),
      ]);
      expect(fromA.status).toBe(200);
      expect(fromB.status).toBe(200);
      const stored = await state(source);
      expect(stored.documents).toBe(1);
      const amber = stored.chunks.filter((c) => c.content.includes('amber')).length;
      const cobalt = stored.chunks.filter((c) => c.content.includes('cobalt')).length;
      // One version, all of it: never a mix, never a part.
      expect(amber + cobalt).toBe(stored.chunks.length);
      expect(amber === 0 || cobalt === 0).toBe(true);
      const winner = amber > 0 ? fromA : fromB;
      expect(stored.chunks).toHaveLength(winner.body.chunks as number);
      expect(stored.chunkCount).toBe(stored.chunks.length);
      expect((await listedSources(a)).filter((s) => s === source)).toHaveLength(1);
      expect(await listedSources(b)).toEqual(await listedSources(a));
    }
    await expectIndexConsistent();
  });

  it('an upload racing a deletion leaves the source whole or gone, never in part', async () => {
    const [a, b] = replicaPair(stack);
    for (let round = 1; round <= ROUNDS; round++) {
      const source = `notes-${round}.txt`;
      // An older version to delete, so the deletion has something to race for.
      expect(
        (
          await ingest(a, [
            file('notes.txt', version('amber', 4)),
            { name: 'source', value: source },
          ])
        ).status,
      ).toBe(200);
      const [upload, deletion] = await Promise.all([
        ingest(a, [file('notes.txt', version('cobalt', 9)), { name: 'source', value: source }]),
        // Later rounds let the upload get further before the deletion arrives.
        new Promise((resolve) => setTimeout(resolve, (round - 1) * 15)).then(() =>
          b.fetch(`/documents/${encodeURIComponent(source)}`, { method: 'DELETE' }),
        ),
      ]);
      expect(upload.status).toBe(200);
      expect([200, 404]).toContain(deletion.status);
      const stored = await state(source);
      if (stored.documents === 0) {
        expect(stored.chunks).toEqual([]);
      } else {
        expect(stored.documents).toBe(1);
        // Whatever survived is one version whole: the new upload, since it came after the old.
        expect(stored.chunks.every((c) => c.content.includes('cobalt'))).toBe(true);
        expect(stored.chunks).toHaveLength(upload.body.chunks as number);
      }
    }
    await expectIndexConsistent();
  });
});
