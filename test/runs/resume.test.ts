import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type EngineStack, startEngineStack } from '../support/chat-stack.ts';
import { readChat } from '../support/chat-stream.ts';
import { ENGINES } from '../support/engines.ts';
import { reply } from '../support/fake-llm-server.ts';
import {
  holdAt,
  lastEventId,
  readAll,
  readThenLeave,
  type SseEvent,
  textOf,
} from '../support/resumable.ts';
import { waitFor } from '../support/wait-for.ts';

const ANSWER_MAX_SECONDS = 10;

/**
 * Answers that outlive their connection (issue 32), on one process of each engine: a client
 * that opts in with `"resumable": true` can leave at any moment and come back for exactly
 * what it missed, then the live rest; one that does not opt in is unchanged. The fake model
 * is held at a chosen chunk, so the cut falls where the test says on any machine.
 */
describe.each(ENGINES)('resumable answers on the %s engine', (engine) => {
  let stack: EngineStack;

  beforeAll(async () => {
    // The shortest bound there is, so an answer nobody listens to is seen to end.
    stack = await startEngineStack(engine, { ANSWER_MAX_SECONDS: String(ANSWER_MAX_SECONDS) });
  });
  afterAll(() => stack?.stop());
  afterEach(() => {
    stack.llm.assertNoUnexpected();
    stack.llm.assertAllConsumed();
  });

  const chat = (body: Record<string, unknown>, signal?: AbortSignal) =>
    stack.parley.fetch('/chat', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      ...(signal && { signal }),
    });
  const resume = (user: string, runId: string, lastId: number, signal?: AbortSignal) =>
    stack.parley.fetch(`/users/${user}/runs/${runId}/events`, {
      headers: { 'last-event-id': String(lastId) },
      ...(signal && { signal }),
    });
  const history = async (user: string) =>
    (await (await stack.parley.fetch(`/users/${user}/history`)).json()) as {
      turns: { run_id: string; answer: string; status: string; interrupted: boolean }[];
    };

  it('numbers every event of an opted-in stream; a stream not opted in is unchanged', async () => {
    const text = 'Plain and numbered answers read the same.';
    stack.llm.enqueue(reply.text(text), reply.text(text));
    const plain = await chat({ user_id: 'ids', message: 'hi' });
    const plainRaw = await plain.text();
    const numbered = await chat({ user_id: 'ids', message: 'hi', resumable: true });
    const { raw, events } = await readAll(numbered);

    expect(plainRaw).not.toMatch(/^id:/m);
    const runId = numbered.headers.get('x-parley-run-id');
    // Every event but the closing [DONE] has an id, counting up from 1.
    expect(events.at(-1)).toEqual({ id: undefined, data: '[DONE]' });
    expect(events.slice(0, -1).map((event) => event.id)).toEqual(
      events.slice(0, -1).map((_, index) => index + 1),
    );
    expect(JSON.parse(events.at(-2)?.data ?? '')).toEqual({ __done: true, run_id: runId });
    // Without the ids and the run id, byte for byte what a client that did not opt in gets.
    const plainRunId = plain.headers.get('x-parley-run-id') as string;
    expect(raw.replace(/^id: \d+\n/gm, '').replace(runId as string, plainRunId)).toBe(plainRaw);
    expect(textOf(events)).toBe(text);
  });

  const text = 'The rest of the answer arrives after the cut, exactly once.';
  const cuts = [
    {
      name: 'before the first fragment',
      replies: (pace: (t: string) => Promise<void>) => [reply.text(text, { pace })],
      at: (chunk: number) => chunk === 0,
      seen: '',
      full: text,
    },
    {
      name: 'in the middle of a tool call',
      replies: (pace: (t: string) => Promise<void>) => [
        reply.toolCalls([{ name: 'list_reminders', args: {} }], { text: 'Let me look.', pace }),
        reply.text(text),
      ],
      // The second chunk after the text: the call's name went out, its arguments did not.
      at: (() => {
        let afterText = 0;
        return (_: number, written: string) => written === 'Let me look.' && ++afterText === 2;
      })(),
      seen: 'Let me look.',
      full: `Let me look.${text}`,
    },
    {
      name: 'after the last fragment, before __done',
      replies: (pace: (t: string) => Promise<void>) => [reply.text(text, { pace })],
      at: (_: number, written: string) => written === text,
      seen: text,
      full: text,
    },
  ];

  it.each(cuts)('a client cut $name gets the rest once, live', async (cut) => {
    const user = `cut-${cut.name.replaceAll(' ', '-').replaceAll(',', '')}`;
    const hold = holdAt(cut.at);
    stack.llm.enqueue(...cut.replies(hold.pace));
    const leaving = new AbortController();
    const response = await chat({ user_id: user, message: 'go', resumable: true }, leaving.signal);
    const runId = response.headers.get('x-parley-run-id') as string;
    await hold.reached;
    const before = await readThenLeave(
      response,
      leaving,
      (events) => textOf(events) === cut.seen && (cut.seen !== '' || events.length === 0),
    );
    expect(textOf(before)).toBe(cut.seen);

    // Back while the answer is still held: what was missed, then the live rest.
    const resumed = await resume(user, runId, lastEventId(before));
    expect(resumed.status).toBe(200);
    expect(resumed.headers.get('content-type')).toMatch(/^text\/event-stream/);
    hold.release();
    const after = (await readAll(resumed)).events;

    expectContinues(before, after, runId);
    expect(textOf(before) + textOf(after)).toBe(cut.full);
    // Stored as any answer (history shows the text after the last tool call).
    const turn = (await history(user)).turns.at(-1);
    expect(turn).toMatchObject({ run_id: runId, answer: text, status: 'completed' });
  });

  it('goes on to its end with nobody listening, and replays it whole', async () => {
    const hold = holdAt((chunk) => chunk === 2);
    stack.llm.enqueue(reply.text(text, { pace: hold.pace }));
    const leaving = new AbortController();
    const response = await chat(
      { user_id: 'alone', message: 'go', resumable: true },
      leaving.signal,
    );
    const runId = response.headers.get('x-parley-run-id') as string;
    await hold.reached;
    const before = await readThenLeave(response, leaving, (events) => textOf(events) !== '');
    const exchange = stack.llm.chats.at(-1);
    hold.release();
    // The model's stream is read to its end although the client left.
    expect(await exchange?.ended).toBe('completed');
    await waitForTurn('alone', runId, 'completed');

    const replay = await readAll(await resume('alone', runId, 0));
    expect(textOf(replay.events)).toBe(text);
    expect(replay.events.at(-1)?.data).toBe('[DONE]');
    // And from where the client was: the rest only.
    const rest = await readAll(await resume('alone', runId, lastEventId(before)));
    expectContinues(before, rest.events, runId);
    expect(textOf(before) + textOf(rest.events)).toBe(text);
    // After the end event: only the closing [DONE].
    const done = replay.events.at(-2)?.id as number;
    expect((await readAll(await resume('alone', runId, done))).raw).toBe('data: [DONE]\n\n');
  });

  // A model stream cut anywhere (before, between or inside its events, or after the finish
  // chunk before `[DONE]`), in a burst: the live stream says so, and a listener who comes
  // back after the end replays the very same bytes, the error included, never an answer that
  // looks whole. The turn is kept as the text written, marked as failed.
  it.each([0, 3, 6, 7].flatMap((after) => [false, true].map((inside) => ({ after, inside }))))(
    'replays a model stream cut after $after chunks (inside an event: $inside) as it was shown',
    async ({ after, inside }) => {
      const user = `upstream-cut-${after}-${inside}`;
      const full = 'one two three four five six';
      stack.llm.enqueue(
        reply.text(full, { chunks: 6, disconnectAfter: after, cutInsideEvent: inside }),
      );
      const response = await chat({ user_id: user, message: 'go', resumable: true });
      const runId = response.headers.get('x-parley-run-id') as string;
      const live = await readAll(response);
      const error = live.events
        .map((event) => JSON.parse(event.data === '[DONE]' ? 'null' : event.data) as unknown)
        .find((data) => typeof data === 'object' && data !== null && '__error' in data);
      expect(error).toMatchObject({ __error: { code: 'model_unreachable' } });
      expect(live.events.at(-1)?.data).toBe('[DONE]');
      expect(full.startsWith(textOf(live.events))).toBe(true);
      if (after < 6) expect(textOf(live.events).length).toBeLessThan(full.length);

      const replay = await readAll(await resume(user, runId, 0));
      expect(replay.raw).toBe(live.raw);
      const turn = (await history(user)).turns.at(-1);
      expect(turn).toMatchObject({ run_id: runId, answer: textOf(live.events) });
      expect(turn?.status).toBe('failed');
    },
  );

  it('takes ?after= like Last-Event-ID; the header wins', async () => {
    stack.llm.enqueue(reply.text('one two three'));
    const response = await chat({ user_id: 'after', message: 'go', resumable: true });
    const runId = response.headers.get('x-parley-run-id') as string;
    const whole = (await readAll(response)).events;
    const fromQuery = await stack.parley.fetch(`/users/after/runs/${runId}/events?after=1`);
    expect((await readAll(fromQuery)).events).toEqual(whole.slice(1));
    const both = await stack.parley.fetch(`/users/after/runs/${runId}/events?after=0`, {
      headers: { 'last-event-id': '2' },
    });
    expect((await readAll(both)).events).toEqual(whole.slice(2));
  });

  it('a second listener sees the same answer at the same time', async () => {
    const hold = holdAt((chunk) => chunk === 3);
    stack.llm.enqueue(reply.text(text, { pace: hold.pace }));
    const first = await chat({ user_id: 'two-tabs', message: 'go', resumable: true });
    const runId = first.headers.get('x-parley-run-id') as string;
    await hold.reached;
    const second = await resume('two-tabs', runId, 0);
    hold.release();
    const [a, b] = await Promise.all([readAll(first), readAll(second)]);
    expect(b.raw).toBe(a.raw);
    expect(textOf(a.events)).toBe(text);
  });

  it('a conversation opened elsewhere names the answer being written in it, until it ends', async () => {
    const hold = holdAt((chunk) => chunk === 3);
    stack.llm.enqueue(reply.text(text, { pace: hold.pace }));
    const question = 'Where is the spare key?';
    const first = await chat({ user_id: 'phone', message: question, resumable: true });
    const runId = first.headers.get('x-parley-run-id') as string;
    const conversationId = first.headers.get('x-parley-conversation-id') as string;
    const open = async (query = '') =>
      (await (
        await stack.parley.fetch(`/users/phone/conversations/${conversationId}${query}`)
      ).json()) as { turns: { run_id: string }[]; running: unknown };
    await hold.reached;
    // A second device opens the conversation: the answer is not a turn yet, but is named.
    const during = await open();
    expect(during.turns).toEqual([]);
    expect(during.running).toEqual({ run_id: runId, question });
    // Only the newest page names it: an older page is history, whatever is being written.
    expect((await open('?before=999999999')).running).toBeNull();
    // It follows it from there, seeing what the asking device sees.
    const followed = await resume('phone', runId, 0);
    hold.release();
    const [asked, seen] = await Promise.all([readAll(first), readAll(followed)]);
    expect(seen.raw).toBe(asked.raw);
    // Ended: a turn of the conversation, no longer running; another user is not told of it.
    await waitFor(async () => (await open()).running === null);
    expect((await open()).turns.map((turn) => turn.run_id)).toEqual([runId]);
    const other = await stack.parley.fetch(`/users/someone-else/conversations/${conversationId}`);
    expect(other.status).toBe(404);
  });

  it('Stop ends the answer where it is; the partial answer is kept and can be rated', async () => {
    const hold = holdAt((_, written) => written.length > 10);
    stack.llm.enqueue(reply.text(text, { pace: hold.pace }));
    const response = await chat({ user_id: 'stopper', message: 'go', resumable: true });
    const runId = response.headers.get('x-parley-run-id') as string;
    await hold.reached;
    const stopped = await stack.parley.fetch(`/users/stopper/runs/${runId}/stop`, {
      method: 'POST',
    });
    expect(stopped.status).toBe(200);
    expect(await stopped.json()).toEqual({ run_id: runId, status: 'stopping' });
    const { events } = await readAll(response);
    hold.release();
    const partial = textOf(events);
    expect(text.startsWith(partial)).toBe(true);
    expect(partial.length).toBeLessThan(text.length);
    // The end says it was stopped (so a listener elsewhere knows), with no error.
    expect(events.slice(-2).map((event) => event.data)).toEqual([
      JSON.stringify({ __done: true, run_id: runId, stopped: true }),
      '[DONE]',
    ]);
    expect(events.some((event) => event.data.includes('__error'))).toBe(false);
    const turn = await waitForTurn('stopper', runId, 'interrupted');
    expect(turn).toMatchObject({ answer: partial, interrupted: true });
    const rated = await stack.post('/feedback', { run_id: runId, score: 1 });
    expect(rated.status).toBe(200);
    // Stopping an answer that ended says so.
    const again = await stack.parley.fetch(`/users/stopper/runs/${runId}/stop`, {
      method: 'POST',
    });
    expect(await again.json()).toEqual({ run_id: runId, status: 'ended' });
  });

  it('an unknown run, another user’s, or one that was not resumable is a 404', async () => {
    stack.llm.enqueue(reply.text('mine'), reply.text('not resumable'));
    const mine = await chat({ user_id: 'owner', message: 'go', resumable: true });
    const runId = mine.headers.get('x-parley-run-id') as string;
    await mine.text();
    const plain = await chat({ user_id: 'owner', message: 'go' });
    const plainRun = (await readChat(plain)).runId as string;

    const unknown = '00000000-0000-4000-8000-000000000032';
    for (const path of [
      `/users/owner/runs/${unknown}/events`,
      `/users/intruder/runs/${runId}/events`,
      `/users/owner/runs/${plainRun}/events`,
    ]) {
      const response = await stack.parley.fetch(path);
      expect(response.status, path).toBe(404);
      expect(((await response.json()) as { detail: string }).detail).toMatch(/No such run/);
    }
    for (const path of [
      `/users/owner/runs/${unknown}/stop`,
      `/users/intruder/runs/${runId}/stop`,
    ]) {
      expect((await stack.parley.fetch(path, { method: 'POST' })).status, path).toBe(404);
    }
    const badId = await stack.parley.fetch(`/users/owner/runs/${runId}/events`, {
      headers: { 'last-event-id': 'abc' },
    });
    expect(badId.status).toBe(422);
    expect((await stack.parley.fetch(`/users/owner/runs/not-a-uuid/events`)).status).toBe(422);
  });

  it('stops an answer nobody listens to at ANSWER_MAX_SECONDS, keeping it, and frees the user', async () => {
    // The model writes a few words, then nothing more: only the bound can end it.
    stack.llm.enqueue(reply.text(text, { stallAfter: 4 }));
    const leaving = new AbortController();
    const startedAt = Date.now();
    const response = await chat(
      { user_id: 'bounded', message: 'go', resumable: true },
      leaving.signal,
    );
    const runId = response.headers.get('x-parley-run-id') as string;
    const before = await readThenLeave(response, leaving, (events) => textOf(events) !== '');
    const rest = (await readAll(await resume('bounded', runId, lastEventId(before)))).events;
    const tookMs = Date.now() - startedAt;
    const error = rest.find((event) => event.data.includes('__error'));
    expect(JSON.parse(error?.data ?? '{}').__error.code).toBe('answer_timeout');
    expect(rest.at(-1)?.data).toBe('[DONE]');
    expect(tookMs).toBeGreaterThanOrEqual(ANSWER_MAX_SECONDS * 1000 - 500);
    expect(tookMs).toBeLessThan(ANSWER_MAX_SECONDS * 1000 + 10_000);
    const partial = textOf(before) + textOf(rest);
    expect(partial.length).toBeGreaterThan(0);
    expect(text.startsWith(partial)).toBe(true);
    const turn = await waitForTurn('bounded', runId, 'interrupted');
    expect(turn.answer).toBe(partial);
    // The user's turn is free again.
    stack.llm.enqueue(reply.text('next'));
    expect((await readChat(await chat({ user_id: 'bounded', message: 'again' }))).text).toBe(
      'next',
    );
  }, 40_000);

  it('follows at most 20 streams of a user at once (429), the one that asked included', async () => {
    const hold = holdAt((chunk) => chunk === 2);
    stack.llm.enqueue(reply.text(text, { pace: hold.pace }));
    const response = await chat({ user_id: 'many', message: 'go', resumable: true });
    const runId = response.headers.get('x-parley-run-id') as string;
    await hold.reached;
    const listeners = await Promise.all(Array.from({ length: 19 }, () => resume('many', runId, 0)));
    expect(listeners.map((listener) => listener.status)).toEqual(listeners.map(() => 200));
    const refused = await resume('many', runId, 0);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('5');
    hold.release();
    const all = await Promise.all([response, ...listeners].map(readAll));
    for (const { events } of all) expect(textOf(events)).toBe(text);
    // Once they are done, following is possible again.
    expect((await resume('many', runId, 0)).status).toBe(200);
  });

  it('a client that leaves no longer counts among the 20 streams its user follows', async () => {
    const hold = holdAt((chunk) => chunk === 2);
    stack.llm.enqueue(reply.text(text, { pace: hold.pace }));
    const leaving = new AbortController();
    const response = await chat(
      { user_id: 'left', message: 'go', resumable: true },
      leaving.signal,
    );
    const runId = response.headers.get('x-parley-run-id') as string;
    await hold.reached;
    await readThenLeave(response, leaving, (events) => events.length > 0);
    // Its place is free once the server has seen it leave: 20 others can follow.
    let listeners: Response[] = [];
    await waitFor(async () => {
      listeners = await Promise.all(Array.from({ length: 20 }, () => resume('left', runId, 0)));
      const statuses = listeners.map((listener) => listener.status);
      if (statuses.every((status) => status === 200)) return true;
      await Promise.all(listeners.map((listener) => listener.body?.cancel()));
      return false;
    });
    hold.release();
    const all = await Promise.all(listeners.map(readAll));
    for (const { events } of all) expect(textOf(events)).toBe(text);
  });

  async function waitForTurn(user: string, runId: string, status: string) {
    for (let tries = 0; ; tries++) {
      const turn = (await history(user)).turns.find((t) => t.run_id === runId);
      if (turn?.status === status) return turn;
      if (tries > 100) throw new Error(`run ${runId} is ${turn?.status}, not ${status}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
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
