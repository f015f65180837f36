import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { RunEventWriter } from '../../src/runs/run-event-writer.ts';
import { RunEventRepository } from '../../src/storage/run-event-repository.ts';
import { ENGINES, type OpenTestDatabase, openTestDatabase } from '../support/engines.ts';

const logger = pino({ level: 'silent' });
const DAY_MS = 24 * 3_600_000;

/**
 * The run event log (migrations 0013 and 0017: one row per run per flush) on both engines: what a writer batches is stored once and
 * read back identical, a flush that failed after it committed inserts nothing twice, abandoned
 * runs end once, and old runs are pruned.
 */
describe.each(ENGINES)('the run event log on the %s engine', (engine) => {
  let opened: OpenTestDatabase;
  let store: RunEventRepository;

  beforeAll(async () => {
    opened = await openTestDatabase(engine);
    store = new RunEventRepository(opened.database.db, { notify: engine === 'server' });
  });
  afterAll(() => opened?.close());

  const sql = (text: string, values: unknown[] = []) =>
    opened.database.db.$client.query(text, values);

  /** Writes `events` of new runs through a writer; answers the runs and the flushes made. */
  async function write(runs: number, fragments: string[], fail?: () => boolean) {
    let flushes = 0;
    const ids = Array.from({ length: runs }, () => randomUUID());
    for (const id of ids) await store.open(id, 'writer', 'holder-1');
    const stored = new Set<string>();
    const writer = new RunEventWriter({
      store: {
        append: async (events, progress) => {
          flushes += 1;
          await store.append(events, progress);
          // Committed, but the reply lost: the writer must try again.
          if (fail?.()) throw new Error('connection lost after commit');
        },
      },
      logger,
      flushMs: 20,
      quietFlushMs: 20,
      stored: (runId) => stored.add(runId),
    });
    for (const [index, text] of fragments.entries()) {
      for (const id of ids) writer.add(id, index + 1, { type: 'text', text });
    }
    for (const id of ids) {
      writer.add(id, fragments.length + 1, { type: 'done', runId: id });
      writer.end(id);
    }
    await writer.idle();
    expect([...stored].sort()).toEqual([...ids].sort());
    return { ids, flushes };
  }

  it('stores many runs’ events in a few statements and reads them back byte for byte', async () => {
    const fragments = [
      'plain',
      ' "quoted" \\ back',
      '\n\nnew lines\r\n',
      '한국어 😀 \u2028\u2029',
      '<think>',
      '',
      ' end.',
    ];
    const { ids, flushes } = await write(5, fragments);
    // Everything added in one tick goes in one statement (the end included).
    expect(flushes).toBe(1);
    for (const id of ids) {
      const read = await store.read(id, 'writer', 0);
      expect(read?.status).toBe('ended');
      expect(read?.events.map((e) => e.seq)).toEqual(fragments.map((_, i) => i + 1).concat(8));
      const texts = read?.events.flatMap((e) => {
        const event = e.event as { type: string; text?: string };
        return event.type === 'text' ? [event.text] : [];
      });
      expect(texts?.join('')).toBe(fragments.join(''));
      expect(read?.events.at(-1)?.event).toEqual({ type: 'done', runId: id });
      // And from a position: only what follows it.
      expect((await store.read(id, 'writer', 6))?.events.map((e) => e.seq)).toEqual([7, 8]);
    }
  });

  /** Events stored for a run, counted from its batches. */
  const storedCount = async (runId: string) =>
    (
      await sql(
        'SELECT coalesce(sum(last_seq - first_seq + 1), 0)::int AS n FROM run_event_batches WHERE run_id = $1',
        [runId],
      )
    ).rows[0].n as number;

  it('stores a burst of runs a hundred runs per statement, every event of each', async () => {
    const { ids, flushes } = await write(250, ['one', ' two']);
    expect(flushes).toBe(3);
    for (const id of [ids[0], ids[149], ids[249]] as string[]) {
      expect((await store.read(id, 'writer', 0))?.events.map((e) => e.seq)).toEqual([1, 2, 3]);
    }
  });

  it('inserts nothing twice when a flush committed but failed to answer', async () => {
    let failures = 1;
    const { ids, flushes } = await write(1, ['a', 'b', 'c'], () => failures-- > 0);
    expect(flushes).toBe(2);
    expect(await storedCount(ids[0] as string)).toBe(4);
  });

  it('stores each event once when a flush that committed is tried again with more events', async () => {
    const id = randomUUID();
    await store.open(id, 'writer', 'holder-1');
    let tries = 0;
    let firstTry: () => void = () => {};
    const firstTried = new Promise<void>((resolve) => {
      firstTry = resolve;
    });
    const writer = new RunEventWriter({
      store: {
        append: async (batches, progress) => {
          tries += 1;
          await store.append(batches, progress);
          if (tries === 1) {
            firstTry();
            throw new Error('connection lost after commit');
          }
        },
      },
      logger,
      flushMs: 10,
      quietFlushMs: 10,
      stored: () => {},
    });
    writer.add(id, 1, { type: 'text', text: 'a' });
    writer.add(id, 2, { type: 'text', text: 'b' });
    await firstTried;
    // Added while the writer waits to try again: the retry carries 1-4 from the same seq.
    writer.add(id, 3, { type: 'text', text: 'c' });
    writer.add(id, 4, { type: 'done', runId: id });
    writer.end(id);
    await writer.idle();
    expect(tries).toBe(2);
    expect((await store.read(id, 'writer', 0))?.events.map((e) => e.seq)).toEqual([1, 2, 3, 4]);
    expect(await storedCount(id)).toBe(4);
  });

  it('stores a run at the quiet pace until it is watched, then at once and often', async () => {
    const id = randomUUID();
    await store.open(id, 'paced', 'holder-1');
    const flushedAt: number[] = [];
    const stored: string[] = [];
    const writer = new RunEventWriter({
      store: {
        append: async (batches, progress) => {
          flushedAt.push(performance.now());
          await store.append(batches, progress);
        },
      },
      logger,
      flushMs: 20,
      quietFlushMs: 60_000,
      stored: (runId) => stored.push(runId),
    });
    const seen = async () => (await store.read(id, 'paced', 0))?.events.length;
    writer.add(id, 1, { type: 'text', text: 'a' });
    writer.add(id, 2, { type: 'text', text: 'b' });
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(flushedAt).toEqual([]); // followed only from memory: nothing stored yet
    expect(await seen()).toBe(0);
    const watchedAt = performance.now();
    writer.watch(id);
    await vi.waitFor(async () => expect(await seen()).toBe(2), { timeout: 2_000, interval: 5 });
    expect((flushedAt[0] as number) - watchedAt).toBeLessThan(1_000);
    writer.add(id, 3, { type: 'text', text: 'c' });
    await vi.waitFor(async () => expect(await seen()).toBe(3), { timeout: 2_000, interval: 5 });
    writer.add(id, 4, { type: 'done', runId: id });
    writer.end(id);
    await vi.waitFor(() => expect(stored).toEqual([id]), { timeout: 2_000, interval: 5 });
    expect(flushedAt).toHaveLength(3);
    expect((await store.read(id, 'paced', 0))?.status).toBe('ended');
  });

  it('stores everything at once when asked to be idle (shutdown), whatever the pace', async () => {
    const id = randomUUID();
    await store.open(id, 'paced', 'holder-1');
    const writer = new RunEventWriter({
      store,
      logger,
      flushMs: 60_000,
      quietFlushMs: 60_000,
      stored: () => {},
    });
    writer.add(id, 1, { type: 'text', text: 'a' });
    writer.add(id, 2, { type: 'done', runId: id });
    writer.end(id);
    const startedAt = performance.now();
    await writer.idle();
    expect(performance.now() - startedAt).toBeLessThan(5_000);
    expect((await store.read(id, 'paced', 0))?.events.map((e) => e.seq)).toEqual([1, 2]);
  });

  it('reads a long log in several reads, each saying whether more follows', async () => {
    const id = randomUUID();
    await store.open(id, 'pager', 'holder-1');
    // 600 flushes of 2 events each: more batches than one read returns.
    const batches = Array.from({ length: 600 }, (_, i) => ({
      runId: id,
      firstSeq: 2 * i + 1,
      events: [
        { type: 'text', text: `${2 * i + 1}` },
        { type: 'text', text: `${2 * i + 2}` },
      ],
    }));
    await store.append(batches, [{ runId: id, lastSeq: 1200, ended: true }]);
    const seen: number[] = [];
    let after = 0;
    for (let reads = 1; ; reads++) {
      const read = await store.read(id, 'pager', after);
      expect(read?.events.length).toBeGreaterThan(0);
      for (const { seq, event } of read?.events ?? []) {
        expect(event).toEqual({ type: 'text', text: `${seq}` });
        seen.push(seq);
      }
      after = seen.at(-1) as number;
      if (!read?.more) {
        expect(reads).toBeGreaterThan(1);
        break;
      }
    }
    expect(seen).toEqual(Array.from({ length: 1200 }, (_, i) => i + 1));
    // From the middle of a batch: only what follows it.
    expect((await store.read(id, 'pager', 1198))?.events.map((e) => e.seq)).toEqual([1199, 1200]);
    expect((await store.read(id, 'pager', 1199))?.events.map((e) => e.seq)).toEqual([1200]);
  });

  it('is read only by its owner', async () => {
    const { ids } = await write(1, ['mine']);
    expect(await store.read(ids[0] as string, 'someone-else', 0)).toBeUndefined();
    expect(await store.requestStop(ids[0] as string, 'someone-else')).toBeUndefined();
  });

  it('ends a run whose holder died once, after its last event, answering its turn once', async () => {
    const id = randomUUID();
    const turn = JSON.stringify({ question: 'pets?', conversationId: randomUUID() });
    await store.open(id, 'orphan', 'dead-holder', turn);
    await store.append(
      [
        {
          runId: id,
          firstSeq: 1,
          events: [
            { type: 'text', text: 'partial' },
            { type: 'tool', name: 'search_documents' },
          ],
        },
        { runId: id, firstSeq: 3, events: [{ type: 'text', text: ', then more' }] },
      ],
      [{ runId: id, lastSeq: 3, ended: false }],
    );
    const ending = [
      { type: 'error', code: 'run_interrupted', message: 'stopped' },
      { type: 'done', runId: id },
    ];
    // A live holder (heartbeat fresh) is left alone, by the ending and by the sweep's list.
    expect(await store.endAbandoned(id, 60_000, ending)).toBeUndefined();
    expect(await store.abandoned('another-holder', 60_000)).not.toContain(id);
    expect((await store.read(id, 'orphan', 0))?.status).toBe('running');
    await sql(
      "UPDATE run_streams SET heartbeat_at = now() - interval '2 minutes' WHERE run_id = $1",
      [id],
    );
    // Listed for every process but its own holder (which, alive, would not be silent).
    expect(await store.abandoned('another-holder', 60_000)).toContain(id);
    expect(await store.abandoned('dead-holder', 60_000)).not.toContain(id);
    expect(await store.endAbandoned(id, 60_000, ending)).toEqual({
      userId: 'orphan',
      startedAt: expect.any(Date),
      turn,
      recorded: false,
      text: 'partial, then more',
    });
    expect(await store.endAbandoned(id, 60_000, ending)).toBeUndefined();
    expect(await store.abandoned('another-holder', 60_000)).not.toContain(id);
    const read = await store.read(id, 'orphan', 0);
    expect(read?.status).toBe('ended');
    expect(read?.events.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5]);
    expect(read?.events.slice(3).map((e) => e.event)).toEqual(ending);
    // The holder was only slow: what it writes after the run was ended is not stored.
    await store.append(
      [{ runId: id, firstSeq: 4, events: [{ type: 'text', text: ' late' }] }],
      [{ runId: id, lastSeq: 4, ended: false }],
    );
    expect((await store.read(id, 'orphan', 0))?.events.map((e) => e.event)).toEqual([
      { type: 'text', text: 'partial' },
      { type: 'tool', name: 'search_documents' },
      { type: 'text', text: ', then more' },
      ...ending,
    ]);
  });

  it('says when the dead holder had stored the run itself (only its end was lost)', async () => {
    const id = randomUUID();
    await store.open(id, 'stored-first', 'dead-holder', JSON.stringify({ question: 'q' }));
    await sql(
      "INSERT INTO chat_runs (id, user_id, status) VALUES ($1, 'stored-first', 'completed')",
      [id],
    );
    await sql(
      "UPDATE run_streams SET heartbeat_at = now() - interval '2 minutes' WHERE run_id = $1",
      [id],
    );
    expect(await store.endAbandoned(id, 60_000, [{ type: 'done', runId: id }])).toMatchObject({
      recorded: true,
    });
  });

  it('prunes runs a day after they ended or their holder died, with their events', async () => {
    const { ids } = await write(2, ['old']);
    const [old, recent] = ids as [string, string];
    const dead = randomUUID();
    const live = randomUUID();
    await store.open(dead, 'pruned', 'dead-holder');
    await store.open(live, 'pruned', 'live-holder');
    await sql("UPDATE run_streams SET ended_at = now() - interval '25 hours' WHERE run_id = $1", [
      old,
    ]);
    await sql(
      "UPDATE run_streams SET heartbeat_at = now() - interval '25 hours' WHERE run_id = $1",
      [dead],
    );
    expect(await store.prune(DAY_MS)).toBeGreaterThanOrEqual(2);
    expect(await store.read(old, 'writer', 0)).toBeUndefined();
    expect(await store.read(dead, 'pruned', 0)).toBeUndefined();
    // The recent run keeps every event (its fragment and its end); the live one, just opened,
    // is still there with none yet.
    expect((await store.read(recent, 'writer', 0))?.events).toEqual([
      { seq: 1, event: { type: 'text', text: 'old' } },
      { seq: 2, event: { type: 'done', runId: recent } },
    ]);
    expect(await store.read(live, 'pruned', 0)).toMatchObject({ status: 'running', events: [] });
    expect(await storedCount(old)).toBe(0);
    const { rows } = await sql(
      'SELECT count(*)::int AS n FROM run_event_batches WHERE run_id = $1',
      [old],
    );
    expect(rows[0].n).toBe(0);
  });
});
