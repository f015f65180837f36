import { readFileSync } from 'node:fs';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type ReplicaStack, startReplicas } from '../support/chat-stack.ts';
import { readChat } from '../support/chat-stream.ts';
import { type ChatCompletionRequest, reply } from '../support/fake-llm-server.ts';
import type { RunningParley } from '../support/start-parley.ts';

/** Every migration the repository ships, each to be applied exactly once. */
const MIGRATIONS = (
  JSON.parse(
    readFileSync(
      new URL('../../src/storage/migrations/meta/_journal.json', import.meta.url),
      'utf8',
    ),
  ) as { entries: unknown[] }
).entries.length;

/** Starting Parley took over 60 s while this machine was shared; a wait, not a speed check. */
const START_TIMEOUT_MS = 300_000;
/** Short, so the test of a replica dying holding a user's turn waits seconds, not minutes. */
const TTL_SECONDS = 3;

/** The conversation a model request carries: role and text of each message after the system prompt. */
function conversation(body: ChatCompletionRequest): string[] {
  return body.messages
    .filter((m) => m.role !== 'system')
    .map((m) => `${m.role}: ${textOf(m.content)}`);
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content.map((part) => (part as { text?: string }).text ?? '').join('');
  }
  return '';
}

const lastQuestion = (body: ChatCompletionRequest) =>
  textOf(body.messages.filter((m) => m.role === 'user').at(-1)?.content);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Only the server engine can be shared: the embedded one belongs to one process. */
describe('three Parley replicas on one PostgreSQL database', () => {
  let stack: ReplicaStack;

  vi.setConfig({ testTimeout: 120_000 });
  beforeAll(async () => {
    // All three at the same moment on a fresh database: they race for its migrations.
    stack = await startReplicas(3, { CHAT_TURN_TTL_SECONDS: String(TTL_SECONDS) });
  }, START_TIMEOUT_MS);
  afterAll(async () => {
    await stack?.stop();
  });

  it('all come up when started at once on a fresh database, each migration applied once', async () => {
    for (const replica of stack.replicas) {
      expect((await replica.fetch('/health')).status).toBe(200);
    }
    const client = new pg.Client({ connectionString: stack.database.url });
    await client.connect();
    try {
      const { rows } = await client.query<{ n: string; distinct_hashes: string }>(
        'SELECT count(*) AS n, count(DISTINCT hash) AS distinct_hashes FROM drizzle.__drizzle_migrations',
      );
      expect(Number(rows[0]?.n)).toBe(MIGRATIONS);
      expect(Number(rows[0]?.distinct_hashes)).toBe(MIGRATIONS);
    } finally {
      await client.end();
    }
  });

  it("serializes one user's chats across replicas: whole turns, none lost, in arrival order", async () => {
    const user = 'scale-one';
    let inFlight = 0;
    let mostInFlight = 0;
    const firstRequest = stack.llm.chats.length;
    stack.llm.respond((body) => {
      // The exchange is tracked before its reply is chosen: count the pending ones.
      inFlight = stack.llm.chats.filter((c) => c.outcome === 'pending').length;
      mostInFlight = Math.max(mostInFlight, inFlight);
      const question = lastQuestion(body);
      // The first answer takes its time, so that every later chat is seen waiting.
      const delayMs = question === 'question 1' ? 3_000 : 25;
      return reply.text(`answer to ${question} in five words`, { delayMs });
    });
    // The order "as far as the database can tell" is the order the chats took their tickets;
    // on a busy machine a request sent 120 ms later can still get there first, so each chat
    // is sent once the one before it is seen queued.
    const client = new pg.Client({ connectionString: stack.database.url });
    await client.connect();
    const queued = async () =>
      Number(
        (await client.query('SELECT count(*) AS n FROM chat_turns WHERE user_id = $1', [user]))
          .rows[0]?.n,
      );

    const questions = Array.from({ length: 6 }, (_, i) => `question ${i + 1}`);
    const streams: Promise<Response>[] = [];
    try {
      for (const [i, message] of questions.entries()) {
        const replica = stack.replicas[i % stack.replicas.length];
        if (!replica) throw new Error('no replica');
        streams.push(stack.chat(replica, { message, user_id: user }));
        await vi.waitFor(async () => expect(await queued()).toBe(i + 1), { timeout: 20_000 });
      }
    } finally {
      await client.end();
    }
    const answers = await Promise.all(streams.map(async (s) => readChat(await s)));
    for (const [i, answer] of answers.entries()) {
      expect(answer.error).toBeUndefined();
      expect(answer.text).toBe(`answer to ${questions[i]} in five words`);
    }
    expect(mostInFlight).toBe(1);

    // Each model request saw every earlier turn whole, in the order the chats arrived.
    const requests = stack.llm.chats.slice(firstRequest).map((c) => c.body);
    expect(requests.map(lastQuestion)).toEqual(questions);
    for (const [i, body] of requests.entries()) {
      const expected = questions
        .slice(0, i + 1)
        .flatMap((q, k) =>
          k < i ? [`user: ${q}`, `assistant: answer to ${q} in five words`] : [`user: ${q}`],
        );
      expect(conversation(body)).toEqual(expected);
    }
    stack.llm.assertNoUnexpected();
  });

  it("serializes a burst of one user's chats sent to every replica at once", async () => {
    const user = 'scale-burst';
    let mostInFlight = 0;
    stack.llm.respond((body) => {
      mostInFlight = Math.max(
        mostInFlight,
        stack.llm.chats.filter((c) => c.outcome === 'pending').length,
      );
      return reply.text(`answer to ${lastQuestion(body)}`, { chunks: 3, delayMs: 5 });
    });
    const questions = Array.from({ length: 18 }, (_, i) => `burst ${i}`);
    const answers = await Promise.all(
      questions.map(async (message, i) => {
        const replica = stack.replicas[i % stack.replicas.length];
        if (!replica) throw new Error('no replica');
        return readChat(await stack.chat(replica, { message, user_id: user }));
      }),
    );
    for (const [i, answer] of answers.entries()) {
      expect(answer.text).toBe(`answer to ${questions[i]}`);
    }
    expect(mostInFlight).toBe(1);
    const first = stack.llm.chats.length;
    await readChat(
      await stack.chat(stack.replicas[0] as RunningParley, { message: 'last', user_id: user }),
    );
    const history = conversation(stack.llm.chats[first]?.body as ChatCompletionRequest);
    // Every question is followed by its own answer: no turn interleaved or lost.
    expect(history).toHaveLength(questions.length * 2 + 1);
    for (let i = 0; i < questions.length * 2; i += 2) {
      const question = history[i]?.replace('user: ', '');
      expect(history[i + 1]).toBe(`assistant: answer to ${question}`);
    }
    expect(new Set(history.filter((m) => m.startsWith('user: '))).size).toBe(questions.length + 1);
  });

  it('a /reset through one replica is respected by the next answer of another', async () => {
    const user = 'scale-reset';
    const [a, b] = stack.replicas;
    if (!a || !b) throw new Error('no replicas');
    stack.llm.respond((body) => reply.text(`noted ${lastQuestion(body)}`));
    const first = stack.llm.chats.length;
    expect(
      (await readChat(await stack.chat(a, { message: 'my cat is Tom', user_id: user }))).text,
    ).toBe('noted my cat is Tom');
    const reset = await a.fetch(`/reset?user_id=${user}`, { method: 'POST' });
    expect(reset.status).toBe(200);
    expect(
      (await readChat(await stack.chat(b, { message: 'who is my cat?', user_id: user }))).text,
    ).toBe('noted who is my cat?');
    const [before, after] = stack.llm.chats.slice(first).map((c) => c.body);
    if (!before || !after) throw new Error('missing model requests');
    expect(conversation(before)).toEqual(['user: my cat is Tom']);
    expect(conversation(after)).toEqual(['user: who is my cat?']);
  });

  it('a client that leaves while waiting for its turn gives its place up at once', async () => {
    const user = 'scale-leave';
    const [a, b] = stack.replicas;
    if (!a || !b) throw new Error('no replicas');
    // Slow enough (4 s) that A is still answering when B, on a busy machine, gets queued.
    stack.llm.enqueue(reply.text('one two three four five six seven eight', { delayMs: 500 }));
    stack.llm.respond((body) => reply.text(`answer to ${lastQuestion(body)}`));
    const first = stack.llm.chats.length;
    const running = stack.chat(a, { message: 'a slow one', user_id: user });
    while (stack.llm.chats.length === first) await sleep(20);

    const leaving = new AbortController();
    const waiting = stack.chat(b, { message: 'never mind', user_id: user }, leaving.signal);
    // Leave once B's chat is seen waiting (its ticket queued behind A's), not after a fixed
    // pause: on a busy machine B's request can take longer than any pause to get there.
    const client = new pg.Client({ connectionString: stack.database.url });
    await client.connect();
    try {
      await vi.waitFor(
        async () => {
          const { rows } = await client.query(
            'SELECT count(*) AS n FROM chat_turns WHERE user_id = $1',
            [user],
          );
          expect(Number(rows[0]?.n)).toBe(2);
        },
        { timeout: 20_000 },
      );
    } finally {
      await client.end();
    }
    leaving.abort();
    await waiting.then((r) => r.text()).catch(() => {});
    // B's chat left while it waited (it never ran), before A's answer was done.
    await b.waitForLog(
      (l) => l.msg === 'client left while waiting for the previous chat of this user',
    );
    expect(stack.llm.chats.at(-1)?.outcome).toBe('pending');
    expect((await readChat(await running)).text).toBe('one two three four five six seven eight');

    // Its ticket is gone: the next chat does not wait for it to expire (TTL_SECONDS).
    const startedAt = Date.now();
    const next = await readChat(await stack.chat(b, { message: 'and now?', user_id: user }));
    expect(next.text).toBe('answer to and now?');
    expect(Date.now() - startedAt).toBeLessThan(1_500);
    const last = stack.llm.chats.at(-1)?.body;
    if (!last) throw new Error('no model request');
    expect(conversation(last)).toEqual([
      'user: a slow one',
      'assistant: one two three four five six seven eight',
      'user: and now?',
    ]);
  });

  it("a replica frozen past the TTL loses the user's turn: its late answer is not stored", async () => {
    const user = 'scale-frozen';
    const [a, , frozen] = stack.replicas;
    if (!a || !frozen) throw new Error('no replicas');
    // The frozen replica's answer takes ~3 s; the other replica's chats answer at once.
    stack.llm.enqueue(reply.text('one two three four five six seven eight', { delayMs: 400 }));
    stack.llm.respond((body) => reply.text(`answer to ${lastQuestion(body)}`));
    const first = stack.llm.chats.length;
    const late = stack.chat(frozen, { message: 'a slow one', user_id: user });
    while (stack.llm.chats.length === first) await sleep(20); // it holds the turn

    // A stall longer than the TTL (a long GC pause, a suspended VM): the turn passes on.
    frozen.process.kill('SIGSTOP');
    let meanwhile: Awaited<ReturnType<typeof readChat>>;
    try {
      meanwhile = await readChat(await stack.chat(a, { message: 'meanwhile', user_id: user }));
    } finally {
      frozen.process.kill('SIGCONT');
    }
    expect(meanwhile.text).toBe('answer to meanwhile');
    expect(meanwhile.ended).toBe(true);

    // Resumed, the frozen replica finishes its stream but may not store its messages: they
    // would land after an answer that never saw them. The user is told; the run is kept.
    const stalled = await readChat(await late);
    expect(stalled.error?.code).toBe('turn_lost');
    expect(stalled.ended).toBe(true);
    const feedback = await a.fetch('/feedback', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ run_id: stalled.runId, score: 0 }),
    });
    expect(feedback.status).toBe(200);
    await frozen.waitForLog(
      (l) => l.msg === "chat not stored: this user's turn passed to another chat",
    );

    const next = await readChat(await stack.chat(a, { message: 'and now?', user_id: user }));
    expect(next.text).toBe('answer to and now?');
    const last = stack.llm.chats.at(-1)?.body;
    if (!last) throw new Error('no model request');
    expect(conversation(last)).toEqual([
      'user: meanwhile',
      'assistant: answer to meanwhile',
      'user: and now?',
    ]);
  });

  it("a replica killed mid-stream holds the user's turn no longer than the TTL", async () => {
    const user = 'scale-kill';
    const [a, , victim] = stack.replicas;
    if (!a || !victim) throw new Error('no replicas');
    // The victim's chat streams slowly; the survivor's next one answers at once.
    stack.llm.enqueue(
      reply.text('one two three four five six seven eight nine ten', { delayMs: 500 }),
    );
    stack.llm.respond((body) => reply.text(`answer to ${lastQuestion(body)}`));
    const first = stack.llm.chats.length;
    const doomed = await stack.chat(victim, { message: 'a long one', user_id: user });
    const reader = doomed.body?.getReader();
    await reader?.read(); // the stream has started: the victim holds the turn
    while (stack.llm.chats.length === first) await sleep(20);

    await victim.stop('SIGKILL');
    const killedAt = Date.now();
    // Another user is not held up at all.
    const other = await readChat(await stack.chat(a, { message: 'hello', user_id: 'scale-other' }));
    expect(other.text).toBe('answer to hello');
    expect(Date.now() - killedAt).toBeLessThan(1_500);

    const next = await readChat(await stack.chat(a, { message: 'still there?', user_id: user }));
    const waited = Date.now() - killedAt;
    expect(next.error).toBeUndefined();
    expect(next.text).toBe('answer to still there?');
    // The dead ticket's last heartbeat was at most a third of the TTL before the kill.
    expect(waited).toBeGreaterThanOrEqual(((TTL_SECONDS * 2) / 3) * 1000 - 200);
    expect(waited).toBeLessThan(TTL_SECONDS * 1000 + 2_500);
    // The turn cut by the kill was never stored: the survivor's model saw no half answer.
    const last = stack.llm.chats.at(-1)?.body;
    if (!last) throw new Error('no model request');
    expect(conversation(last)).toEqual(['user: still there?']);
  });

  it("a replica stopped with SIGTERM mid-stream finishes the answer and frees the user's turn at once", async () => {
    const user = 'scale-rolling';
    const [a, b] = stack.replicas;
    if (!a || !b) throw new Error('no replicas');
    stack.llm.enqueue(reply.text('one two three four five six', { delayMs: 150 }));
    stack.llm.respond((body) => reply.text(`answer to ${lastQuestion(body)}`));
    const first = stack.llm.chats.length;
    const draining = stack.chat(b, { message: 'before the restart', user_id: user });
    while (stack.llm.chats.length === first) await sleep(20);
    const waiting = stack.chat(a, { message: 'during the restart', user_id: user });
    await sleep(200); // A's chat now waits for B's

    const stopped = b.stop('SIGTERM');
    expect((await readChat(await draining)).text).toBe('one two three four five six');
    const drainedAt = Date.now();
    const next = await readChat(await waiting);
    expect(next.text).toBe('answer to during the restart');
    // B left the queue on its way out: A did not wait for the ticket to expire.
    expect(Date.now() - drainedAt).toBeLessThan(1_500);
    expect(await stopped).toBe(0);
    const last = stack.llm.chats.at(-1)?.body;
    if (!last) throw new Error('no model request');
    expect(conversation(last)).toEqual([
      'user: before the restart',
      'assistant: one two three four five six',
      'user: during the restart',
    ]);
  });
});
