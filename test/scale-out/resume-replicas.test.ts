import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ReplicaStack, startReplicas } from '../support/chat-stack.ts';
import { streamReader } from '../support/chat-stream.ts';
import { reply } from '../support/fake-llm-server.ts';
import {
  followerWaits,
  holdAt,
  lastEventId,
  readAll,
  readThenLeave,
  type SseEvent,
  sseEvents,
  textOf,
} from '../support/resumable.ts';
import type { RunningParley } from '../support/start-parley.ts';

/** A holder silent this long is dead; the smallest JOB_LEASE_SECONDS allows. */
const LEASE_SECONDS = 10;

/**
 * Resumable answers across replicas on one PostgreSQL server (issue 32): an answer generated
 * on one replica is followed, resumed and stopped from another, which hears of it through
 * LISTEN/NOTIFY with the stored events as the truth; a replica killed mid-answer leaves its
 * listeners an error naming the interruption within JOB_LEASE_SECONDS, never a hanging stream.
 */
describe('resumable answers across replicas', () => {
  let stack: ReplicaStack;
  let a: RunningParley;
  let b: RunningParley;

  beforeAll(async () => {
    stack = await startReplicas(3, { JOB_LEASE_SECONDS: String(LEASE_SECONDS) });
    [a, b] = stack.replicas as [RunningParley, RunningParley];
  }, 240_000);
  afterAll(() => stack?.stop());

  const chat = (on: RunningParley, user: string, signal?: AbortSignal) =>
    stack.chat(on, { user_id: user, message: 'go', resumable: true }, signal);
  const resume = (on: RunningParley, user: string, runId: string, lastId: number) =>
    on.fetch(`/users/${user}/runs/${runId}/events`, {
      headers: { 'last-event-id': String(lastId) },
    });

  const text = 'Written on one replica, read on another, every byte once.';
  const cuts = [
    { name: 'before the first fragment', at: (chunk: number) => chunk === 0, seen: '' },
    {
      name: 'mid-answer',
      at: (_: number, written: string) => written === 'Written on one replica,',
      seen: 'Written on one replica,',
    },
    {
      name: 'after the last fragment, before __done',
      at: (_: number, written: string) => written === text,
      seen: text,
    },
  ];

  it.each(cuts)('a client cut $name on one replica resumes on another', async (cut) => {
    const user = `across-${cut.name.replaceAll(/\W+/g, '-')}`;
    const hold = holdAt(cut.at);
    stack.llm.enqueue(reply.text(text, { pace: hold.pace }));
    const leaving = new AbortController();
    const response = await chat(a, user, leaving.signal);
    const runId = response.headers.get('x-parley-run-id') as string;
    await hold.reached;
    const before = await readThenLeave(
      response,
      leaving,
      (events) => textOf(events) === cut.seen && (cut.seen !== '' || events.length === 0),
    );
    // The replica that generates it may not have stored the last fragments yet: the other
    // one replays what is stored, then follows the rest as it is stored.
    const resumed = await resume(b, user, runId, lastEventId(before));
    expect(resumed.status).toBe(200);
    hold.release();
    const after = (await readAll(resumed)).events;
    expectContinues(before, after, runId);
    expect(textOf(before) + textOf(after)).toBe(text);
  });

  it('listeners on two replicas see the same answer at the same time', async () => {
    const hold = holdAt((chunk) => chunk === 3);
    stack.llm.enqueue(reply.text(text, { pace: hold.pace }));
    const first = await chat(a, 'two-replicas');
    const runId = first.headers.get('x-parley-run-id') as string;
    await hold.reached;
    const second = await resume(b, 'two-replicas', runId, 0);
    hold.release();
    const [onA, onB] = await Promise.all([readAll(first), readAll(second)]);
    expect(onB.raw).toBe(onA.raw);
    expect(textOf(onA.events)).toBe(text);
  });

  it('Stop on another replica stops the answer where it is generated', async () => {
    const hold = holdAt((_, written) => written.length > 10);
    stack.llm.enqueue(reply.text(text, { pace: hold.pace }));
    const response = await chat(a, 'stop-across');
    const runId = response.headers.get('x-parley-run-id') as string;
    await hold.reached;
    const stopped = await b.fetch(`/users/stop-across/runs/${runId}/stop`, { method: 'POST' });
    expect(await stopped.json()).toEqual({ run_id: runId, status: 'stopping' });
    const { events } = await readAll(response);
    hold.release();
    expect(text.startsWith(textOf(events))).toBe(true);
    expect(textOf(events).length).toBeLessThan(text.length);
    expect(events.slice(-2).map((event) => event.data)).toEqual([
      JSON.stringify({ __done: true, run_id: runId, stopped: true }),
      '[DONE]',
    ]);
    // Kept, marked interrupted, on the replica that generated it.
    const turn = await waitFor(async () => {
      const history = (await (await b.fetch('/users/stop-across/history')).json()) as {
        turns: { run_id: string; status: string; answer: string }[];
      };
      return history.turns.find((t) => t.run_id === runId && t.status === 'interrupted');
    });
    expect(turn.answer).toBe(textOf(events));
  });

  /** A paced answer on replica a, followed from the start on b or not; its stored rows. */
  async function pacedAnswer(user: string, followedOn?: RunningParley) {
    const tokens = 150;
    const paced = Array.from({ length: tokens }, (_, i) => `t${i}`).join(' ');
    stack.llm.enqueue(reply.text(paced, { chunks: tokens, delayMs: 10 }));
    const startedAt = Date.now();
    const response = await chat(a, user);
    const runId = response.headers.get('x-parley-run-id') as string;
    const follower = followedOn ? await resume(followedOn, user, runId, 0) : undefined;
    const [own, followed] = await Promise.all([
      readAll(response),
      follower ? readAll(follower) : undefined,
    ]);
    expect(textOf(own.events)).toBe(paced);
    if (followed) expect(followed.raw).toBe(own.raw);
    const tookMs = Date.now() - startedAt;
    // Each flush stores one row for the run: its events since the last one.
    const client = new pg.Client({ connectionString: stack.database.url });
    await client.connect();
    try {
      // A run nobody elsewhere follows has its last events stored up to a second after its
      // end reached the client.
      await waitFor(async () => {
        const ended = await client.query(
          "SELECT 1 FROM run_streams WHERE run_id = $1 AND status = 'ended'",
          [runId],
        );
        return ended.rowCount === 1 ? true : undefined;
      });
      const { rows } = await client.query<{ events: number; flushes: number }>(
        `SELECT sum(last_seq - first_seq + 1)::int AS events, count(*)::int AS flushes
           FROM run_event_batches WHERE run_id = $1`,
        [runId],
      );
      const { events, flushes } = rows[0] as { events: number; flushes: number };
      // Every event the client was sent is stored, once (numbered from 1).
      expect(events).toBe(lastEventId(own.events));
      // Tokens that reach Parley together are one fragment: fewer events than tokens, far
      // fewer on a loaded machine (74 of 150 seen in CI). Enough that storing them one by one
      // would show.
      expect(events).toBeGreaterThan(tokens / 4);
      return {
        events,
        flushes,
        tookMs,
        measured: `${flushes} flushes, ${events} events, ${tookMs} ms`,
      };
    } finally {
      await client.end();
    }
  }

  it('stores a paced answer nobody elsewhere follows about once a second, not per token', async () => {
    const { flushes, tookMs, measured } = await pacedAnswer('cost-quiet');
    expect(tookMs, measured).toBeGreaterThan(1_000);
    expect(flushes, measured).toBeLessThanOrEqual(Math.ceil(tookMs / 1_000) + 1);
  });

  it('stores a run followed on another replica every 50 ms from then on', async () => {
    const { flushes, tookMs, events, measured } = await pacedAnswer('cost-followed', b);
    // The follower's notice reached the holder: far more often than the quiet pace, never
    // more than one statement per 50 ms.
    expect(flushes, measured).toBeGreaterThan(Math.ceil(tookMs / 1_000) + 3);
    expect(flushes, measured).toBeLessThanOrEqual(Math.ceil(tookMs / 50) + 2);
    // Batched: storing per fragment would take about as many statements as events.
    expect(flushes, measured).toBeLessThan(events * 0.75);
  });

  it('a listener on another replica is woken by the notification, not by its poll', async () => {
    const { expected, shown, waits, p75 } = await followerWaits(
      stack.llm,
      () => chat(a, 'woken'),
      (runId) => resume(b, 'woken', runId, 0),
    );
    expect(shown).toBe(expected);
    expect(p75, `waits ${waits.join(', ')} ms`).toBeLessThan(500);
  });

  it('an answer held past two leases, followed on another replica, is not taken for dead', async () => {
    // The other replicas judge a holder by its heartbeat: every third of the lease while it
    // has runs. Without it, the listener's replica (or any sweep) would end this run.
    const held = 'Held for longer than the lease on one replica, then finished.';
    const hold = holdAt((_, written) => written === 'Held for');
    stack.llm.enqueue(reply.text(held, { pace: hold.pace }));
    const response = await chat(a, 'held-long');
    const runId = response.headers.get('x-parley-run-id') as string;
    await hold.reached;
    const listener = streamReader(await resume(b, 'held-long', runId, 0));
    await listener.until((raw) => textOf(sseEvents(raw)) === 'Held for');
    await new Promise((resolve) => setTimeout(resolve, 2.5 * LEASE_SECONDS * 1000));
    hold.release();
    const events = sseEvents(await listener.rest());
    expect(textOf(events)).toBe(held);
    expect(events.some((event) => event.data.includes('__error'))).toBe(false);
    // The client that began it saw the same events (keep-alive comments aside).
    expect((await readAll(response)).events).toEqual(events);
  }, 60_000);

  it('a replica killed mid-answer leaves its listeners an interruption, not a hang', async () => {
    const victim = stack.replicas[2] as RunningParley;
    const hold = holdAt((chunk) => chunk === 4);
    stack.llm.enqueue(reply.text(text, { pace: hold.pace }));
    const response = await chat(victim, 'killed');
    const runId = response.headers.get('x-parley-run-id') as string;
    await hold.reached;
    const listener = streamReader(await resume(b, 'killed', runId, 0));
    // The listener has the partial answer (stored by the victim) before the victim dies.
    const partial = textOf(sseEvents(await listener.until((raw) => textOf(sseEvents(raw)) !== '')));
    const killedAt = Date.now();
    victim.process.kill('SIGKILL');
    const events = sseEvents(await listener.rest());
    const waited = Date.now() - killedAt;
    hold.release();

    expect(text.startsWith(textOf(events))).toBe(true);
    expect(textOf(events).startsWith(partial)).toBe(true);
    const error = events.find((event) => event.data.includes('__error'));
    expect(JSON.parse(error?.data ?? '{}').__error.code).toBe('run_interrupted');
    expect(events.slice(-2).map((event) => event.data)).toEqual([
      JSON.stringify({ __done: true, run_id: runId }),
      '[DONE]',
    ]);
    // Within the lease (plus one poll of the listener), not a stream that hangs.
    expect(waited).toBeLessThan((LEASE_SECONDS + 3) * 1000);
    // Another client, on yet another replica, sees the same ending.
    const again = (await readAll(await resume(a, 'killed', runId, 0))).events;
    expect(again).toEqual(events);
    // The question and the answer as far as it got stay in the conversation, stored once by
    // the replica that ended the run (whichever of the listener and the sweep came first).
    const turns = async () =>
      (
        (await (await a.fetch('/users/killed/history')).json()) as {
          turns: { run_id: string; question: string; answer: string; status: string }[];
        }
      ).turns.filter((turn) => turn.run_id === runId);
    await waitFor(async () => ((await turns()).length > 0 ? true : undefined));
    expect(await turns()).toEqual([
      expect.objectContaining({ question: 'go', answer: textOf(events), status: 'interrupted' }),
    ]);
  }, 60_000);
});

/** The resumed events continue the ones seen: the next ids, ending with the run's end. */
function expectContinues(before: SseEvent[], after: SseEvent[], runId: string): void {
  const ids = after.slice(0, -1).map((event) => event.id);
  const from = lastEventId(before);
  expect(ids).toEqual(ids.map((_, index) => from + index + 1));
  expect(after.slice(-2).map((event) => event.data)).toEqual([
    JSON.stringify({ __done: true, run_id: runId }),
    '[DONE]',
  ]);
}

async function waitFor<T>(probe: () => Promise<T | undefined>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = await probe();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error('not seen in time');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
