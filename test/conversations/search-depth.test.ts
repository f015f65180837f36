import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.ts';
import { openDatabase } from '../../src/storage/database.ts';
import { ENGINES } from '../support/engines.ts';
import { createTestDatabase, type TestDatabase } from '../support/postgres-server.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';

/** Turns stored: 8,000 messages, past the 2,000 newest a search reads in order first. */
const TURNS = 4_000;

interface Hits {
  results: { run_id: string; role: string }[];
  next_before: string | null;
}

describe.each(ENGINES)('searching a long history on the %s engine', (engine) => {
  let parley: RunningParley;
  let server: TestDatabase | undefined;
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-search-depth-'));
  const runs: string[] = [];

  beforeAll(async () => {
    server = engine === 'server' ? await createTestDatabase() : undefined;
    const database = await openDatabase(
      { ...parseConfig({}), DATA_DIR: dataDir, DATABASE_URL: server?.url },
      pino({ level: 'silent' }),
    );
    const conversation = randomUUID();
    await database.db.$client.query(
      `INSERT INTO conversations (id, user_id) VALUES ($1, 'deep'), ($2, 'shallow')`,
      [conversation, randomUUID()],
    );
    const rows = [];
    let parent: string | null = null;
    for (let turn = 0; turn < TURNS; turn++) {
      const run = randomUUID();
      runs.push(run);
      // The three oldest turns hold a rare word, one in a hundred a middling one, every turn
      // a common one.
      const question = `common words${turn % 100 === 0 ? ' middling' : ''}${turn < 3 ? ' zeppelin' : ''} ${turn}`;
      for (const [role, text] of [
        ['user', question],
        ['assistant', `answer ${turn}`],
      ]) {
        rows.push({
          user_id: 'deep',
          conversation_id: conversation,
          run_id: run,
          parent_run_id: parent,
          role,
          content: { role, content: text },
        });
      }
      parent = run;
    }
    await database.db.$client.query(
      `INSERT INTO messages (user_id, conversation_id, run_id, parent_run_id, role, content, search)
       SELECT user_id, conversation_id, run_id, parent_run_id, role, content,
              parley_search_vector(role, content)
         FROM json_to_recordset($1::json) AS m(user_id text, conversation_id uuid, run_id uuid,
              parent_run_id uuid, role text, content jsonb)`,
      [JSON.stringify(rows)],
    );
    await database.close();
    parley = await startParley({ dataDir, env: { DATABASE_URL: server?.url } });
  }, 120_000);
  afterAll(async () => {
    await parley?.stop();
    await server?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const search = async (query: string) =>
    (await (await parley.fetch(`/users/deep/conversations/search${query}`)).json()) as Hits;

  it('finds a rare word far below the newest messages', async () => {
    const rare = await search('?q=zeppelin');
    expect(rare.results.map((hit) => hit.run_id)).toEqual([runs[2], runs[1], runs[0]]);
    expect(rare.next_before).toBeNull();
  });

  it('pages a middling word across the end of the newest messages without a gap', async () => {
    // 10 of its 40 turns are among the newest 2,000 messages: the first page crosses below.
    const expected = runs.filter((_, turn) => turn % 100 === 0).reverse();
    const first = await search('?q=middling&limit=30');
    expect(first.results.map((hit) => hit.run_id)).toEqual(expected.slice(0, 30));
    const second = await search(`?q=middling&limit=30&before=${first.next_before}`);
    expect(second.results.map((hit) => hit.run_id)).toEqual(expected.slice(30));
    expect(second.next_before).toBeNull();
  });

  it('pages a common word, newest first, without a gap', async () => {
    let before: string | null = null;
    const seen: string[] = [];
    for (let page = 0; page < 3; page++) {
      const hits: Hits = await search(
        `?q=common&limit=50${before === null ? '' : `&before=${before}`}`,
      );
      seen.push(...hits.results.map((hit) => hit.run_id));
      before = hits.next_before;
    }
    expect(seen).toEqual(runs.slice(-150).reverse());
    const deep = await search(`?q=common&limit=50&before=${before}`);
    expect(deep.results.map((hit) => hit.run_id)).toEqual(runs.slice(-200, -150).reverse());
    // Nothing of another user's.
    const shallow = (await (
      await parley.fetch('/users/shallow/conversations/search?q=common')
    ).json()) as Hits;
    expect(shallow.results).toEqual([]);
  });
});
