import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES, type EngineEnv, engineEnv } from '../support/engines.ts';
import { query, seed } from '../support/seed.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';

const TOKEN = 'endpoint-test-token';
const RUN_ID = randomUUID();
const LONG_SOURCE = `docs/${'a'.repeat(995)}`; // 1,000 characters
const ODD_USER_IDS = ['a/b/c', `o'brien"; DROP TABLE messages; --`, '사용자 1', 'x'.repeat(128)];

describe.each(ENGINES)('endpoints on the %s engine', (engine) => {
  let storage: EngineEnv;
  let dataDir: string;
  let parley: RunningParley;
  const target = () => ({ dataDir, databaseUrl: storage.env.DATABASE_URL });

  beforeAll(async () => {
    storage = await engineEnv(engine);
    dataDir = mkdtempSync(join(tmpdir(), 'parley-endpoints-'));
    await seed(target(), {
      documents: [
        { source: 'manuals/a b/guide.pdf', chunks: ['one', 'two', 'three'] },
        { source: 'notes.txt', chunks: ['hello'] },
        { source: 'weird%2Fname?.txt', chunks: ['x'] },
        { source: LONG_SOURCE, chunks: ['long'] },
      ],
      runs: [{ id: RUN_ID, userId: 'alice' }],
      reminders: [
        {
          id: randomUUID(),
          userId: 'alice',
          title: 'Dentist',
          dueOn: '2026-12-24',
          noticesSent: [7],
        },
        {
          id: randomUUID(),
          userId: 'alice',
          title: 'Taxes',
          dueOn: '2026-12-01',
          noticesSent: [7, 1],
        },
        { id: randomUUID(), userId: 'bob', title: "Bob's", dueOn: '2026-12-02' },
        ...ODD_USER_IDS.map((userId) => ({
          id: randomUUID(),
          userId,
          title: `for ${userId}`,
          dueOn: '2027-01-01',
        })),
      ],
    });
    parley = await startParley({ dataDir, env: { API_TOKEN: TOKEN, ...storage.env } });
  });

  afterAll(async () => {
    await parley?.stop();
    await storage?.cleanup();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('reports health with the database reachable', async () => {
    const response = await parley.fetch('/health');
    expect(response.status).toBe(200);
    // The spec's three fields as they were, and the model's state beside them.
    const { model, ...spec } = (await response.json()) as Record<string, unknown>;
    expect(spec).toEqual({ status: 'ok', version: '1.0', database: 'ok' });
    // No model is named: the embedded one is looked for at NO_MODEL_URL, where nothing listens.
    expect(model).toMatchObject({
      source: 'download',
      state: expect.stringMatching(/^(checking|failed)$/),
    });
  });

  it('lists document sources in order', async () => {
    const response = await parley.fetch('/documents');
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      documents: [LONG_SOURCE, 'manuals/a b/guide.pdf', 'notes.txt', 'weird%2Fname?.txt'].sort(),
    });
  });

  it('deletes a source given with slashes and percent-encoding, with all its chunks', async () => {
    const response = await parley.fetch('/documents/manuals/a%20b/guide.pdf', { method: 'DELETE' });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ deleted: 'manuals/a b/guide.pdf' });

    const again = await parley.fetch('/documents/manuals/a%20b/guide.pdf', { method: 'DELETE' });
    expect(again.status).toBe(404);
    const listed = (await (await parley.fetch('/documents')).json()) as { documents: string[] };
    expect(listed.documents).not.toContain('manuals/a b/guide.pdf');
  });

  it('deletes a source whose name holds an encoded slash and a question mark', async () => {
    const path = `/documents/${encodeURIComponent('weird%2Fname?.txt')}`;
    const response = await parley.fetch(path, { method: 'DELETE' });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ deleted: 'weird%2Fname?.txt' });
  });

  it('deletes a source of 1,000 characters', async () => {
    const response = await parley.fetch(`/documents/${LONG_SOURCE}`, { method: 'DELETE' });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ deleted: LONG_SOURCE });
  });

  it('answers 404 with a detail for an unknown source', async () => {
    const response = await parley.fetch('/documents/no/such/file.pdf', { method: 'DELETE' });
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual({ detail: 'No document with source "no/such/file.pdf"' });
  });

  it('answers 422 for a source over 1,024 characters', async () => {
    const response = await parley.fetch(`/documents/${'b'.repeat(1025)}`, { method: 'DELETE' });
    expect(response.status).toBe(422);
    const { detail } = (await response.json()) as { detail: { loc: string[] }[] };
    expect(detail[0]?.loc).toEqual(['path', '*']);
  });

  it('resets the default user when no user_id is given', async () => {
    const response = await parley.fetch('/reset', { method: 'POST' });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ reset: true, user_id: 'default' });
  });

  it.each(ODD_USER_IDS)('resets and echoes the user id %j unchanged', async (userId) => {
    const response = await parley.fetch(`/reset?user_id=${encodeURIComponent(userId)}`, {
      method: 'POST',
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ reset: true, user_id: userId });
  });

  it.each([
    ['empty', ''],
    ['over 128 characters', 'x'.repeat(129)],
    ['with a control character', 'a\u0007b'],
  ])('answers 422 to a user id that is %s', async (_case, userId) => {
    const response = await parley.fetch(`/reset?user_id=${encodeURIComponent(userId)}`, {
      method: 'POST',
    });
    expect(response.status).toBe(422);
    const { detail } = (await response.json()) as { detail: { loc: string[] }[] };
    expect(detail[0]?.loc).toEqual(['query', 'user_id']);
  });

  it("lists a user's reminders soonest first, with the notices sent, and no one else's", async () => {
    const response = await parley.fetch('/reminders/alice');
    expect(response.status).toBe(200);
    const body = (await response.json()) as {
      user_id: string;
      reminders: Record<string, unknown>[];
    };
    expect(body.user_id).toBe('alice');
    expect(body.reminders.map((r) => [r.title, r.date, r.notices_sent])).toEqual([
      ['Taxes', '2026-12-01', ['D-7', 'D-1']],
      ['Dentist', '2026-12-24', ['D-7']],
    ]);
    expect(body.reminders[0]).toMatchObject({
      id: expect.any(String),
      created_at: expect.any(String),
    });

    const nobody = await parley.fetch(`/reminders/${encodeURIComponent("o'brien/x")}`);
    expect(await nobody.json()).toEqual({ user_id: "o'brien/x", reminders: [] });
  });

  it.each(ODD_USER_IDS)(
    'reads the reminders of the user id %j, and only theirs',
    async (userId) => {
      const response = await parley.fetch(`/reminders/${encodeURIComponent(userId)}`);
      expect(response.status).toBe(200);
      const body = (await response.json()) as { user_id: string; reminders: { title: string }[] };
      expect(body.user_id).toBe(userId);
      expect(body.reminders.map((r) => r.title)).toEqual([`for ${userId}`]);
    },
  );

  it('stores feedback for a known run and answers with its id', async () => {
    const response = await parley.fetch('/feedback', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ run_id: RUN_ID, score: 1, comment: '좋아요', extra: 'ignored' }),
    });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { ok: boolean; feedback_id: string };
    expect(body.ok).toBe(true);
    expect(body.feedback_id).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('answers 404 to feedback for an unknown run', async () => {
    const unknown = randomUUID();
    const response = await parley.fetch('/feedback', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ run_id: unknown, score: 0 }),
    });
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual({ detail: `No chat run with run_id ${unknown}` });
  });

  it.each([
    ['a run id that is not a UUID', { run_id: 'abc', score: 1 }, ['body', 'run_id']],
    ['a missing score', { run_id: RUN_ID }, ['body', 'score']],
    ['a key with spaces', { run_id: RUN_ID, score: 1, key: 'a b' }, ['body', 'key']],
    [
      'an over-long comment',
      { run_id: RUN_ID, score: 1, comment: 'x'.repeat(4001) },
      ['body', 'comment'],
    ],
  ])('answers 422 to feedback with %s', async (_case, body, loc) => {
    const response = await parley.fetch('/feedback', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(response.status).toBe(422);
    const { detail } = (await response.json()) as { detail: { loc: string[] }[] };
    expect(detail.map((item) => item.loc)).toEqual([loc]);
  });

  it('keeps what it stored across a restart', async () => {
    expect(await parley.stop()).toBe(0);
    const rows = await query<{ key: string; score: number; comment: string }>(
      target(),
      'SELECT key, score, comment FROM feedback WHERE run_id = $1',
      [RUN_ID],
    );
    expect(rows).toEqual([{ key: 'user_score', score: 1, comment: '좋아요' }]);
    const sources = await query<{ source: string }>(
      target(),
      'SELECT source FROM documents ORDER BY source',
    );
    expect(sources).toEqual([{ source: 'notes.txt' }]);
    const chunkSources = await query<{ source: string }>(
      target(),
      'SELECT DISTINCT d.source FROM chunks c JOIN documents d ON d.id = c.document_id',
    );
    expect(chunkSources).toEqual([{ source: 'notes.txt' }]);

    parley = await startParley({ dataDir, env: { API_TOKEN: TOKEN, ...storage.env } });
    const listed = await parley.fetch('/documents');
    expect(await listed.json()).toEqual({ documents: ['notes.txt'] });
  });
});
