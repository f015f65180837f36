import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunEventWriter } from '../../src/runs/run-event-writer.ts';
import { RunEventRepository } from '../../src/storage/run-event-repository.ts';
import { ENGINES, type OpenTestDatabase, openTestDatabase } from '../support/engines.ts';

const logger = pino({ level: 'silent' });
const DAY_MS = 24 * 3_600_000;

/**
 * The run event log (migration 0013) on both engines: what a writer batches is stored once and
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

  it('inserts nothing twice when a flush committed but failed to answer', async () => {
    let failures = 1;
    const { ids, flushes } = await write(1, ['a', 'b', 'c'], () => failures-- > 0);
    expect(flushes).toBe(2);
    const { rows } = await sql('SELECT count(*)::int AS n FROM run_events WHERE run_id = $1', [
      ids[0],
    ]);
    expect(rows[0].n).toBe(4);
  });

  it('is read only by its owner', async () => {
    const { ids } = await write(1, ['mine']);
    expect(await store.read(ids[0] as string, 'someone-else', 0)).toBeUndefined();
    expect(await store.requestStop(ids[0] as string, 'someone-else')).toBeUndefined();
  });

  it('ends a run whose holder died once, after its last event', async () => {
    const id = randomUUID();
    await store.open(id, 'orphan', 'dead-holder');
    await store.append(
      [{ runId: id, seq: 1, event: { type: 'text', text: 'partial' } }],
      [{ runId: id, lastSeq: 1, ended: false }],
    );
    const ending = [
      { type: 'error', code: 'run_interrupted', message: 'stopped' },
      { type: 'done', runId: id },
    ];
    // A live holder (heartbeat fresh) is left alone.
    await store.endAbandoned(id, 60_000, ending);
    expect((await store.read(id, 'orphan', 0))?.status).toBe('running');
    await sql(
      "UPDATE run_streams SET heartbeat_at = now() - interval '2 minutes' WHERE run_id = $1",
      [id],
    );
    await store.endAbandoned(id, 60_000, ending);
    await store.endAbandoned(id, 60_000, ending);
    const read = await store.read(id, 'orphan', 0);
    expect(read?.status).toBe('ended');
    expect(read?.events).toEqual([
      { seq: 1, event: { type: 'text', text: 'partial' } },
      { seq: 2, event: ending[0] },
      { seq: 3, event: ending[1] },
    ]);
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
    const { rows } = await sql('SELECT count(*)::int AS n FROM run_events WHERE run_id = $1', [
      old,
    ]);
    expect(rows[0].n).toBe(0);
  });
});
