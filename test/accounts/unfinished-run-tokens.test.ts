import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EngineStack, startEngineStack } from '../support/chat-stack.ts';
import { readChat, readUntil } from '../support/chat-stream.ts';
import { ENGINES } from '../support/engines.ts';
import { reply } from '../support/fake-llm-server.ts';
import { waitFor } from '../support/wait-for.ts';

/**
 * The daily token limit counts what a chat used even when its answer does not complete: the
 * tokens the model reported for every call that ended (a tool step before the client left or
 * the model failed) and for a call the model server cut, when it reported them. Otherwise a
 * client that leaves just before the end never uses up its `tokens_per_day`. Each user may
 * spend 100 tokens a day; one unfinished chat reports more, so the next chat is refused.
 */

const ADMIN = 'unfinished-run-tokens-admin-token';
const LIMIT = 100;
/** What the tool step of each chat reports: more than the day's limit. */
const TOOL_STEP = { prompt: 70, completion: 40 };

describe.each(ENGINES)('tokens of chats that do not complete on the %s engine', (engine) => {
  let stack: EngineStack;

  beforeAll(async () => {
    stack = await startEngineStack(engine, { API_TOKEN: ADMIN, EMBEDDINGS_PROVIDER: 'none' });
  });
  afterAll(async () => {
    await stack?.stop();
  });

  /** A user whose key may spend LIMIT tokens a day. */
  async function limitedUser(userId: string): Promise<string> {
    const created = await stack.parley.fetch('/admin/users', {
      method: 'POST',
      token: ADMIN,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ user_id: userId }),
    });
    expect(created.status).toBe(201);
    const patched = await stack.parley.fetch(`/admin/users/${userId}`, {
      method: 'PATCH',
      token: ADMIN,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ limits: { tokens_per_day: LIMIT, chats_per_minute: 0 } }),
    });
    expect(patched.status).toBe(200);
    return ((await created.json()) as { key: string }).key;
  }

  const chat = (key: string, message: string, signal?: AbortSignal) =>
    stack.parley.fetch('/chat', {
      method: 'POST',
      token: key,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ message }),
      ...(signal ? { signal } : {}),
    });

  /** What the user sees next: their usage, and a chat refused over the day's tokens. */
  async function expectDayUsedUp(userId: string, key: string, tokens: number) {
    const usage = (await (
      await stack.parley.fetch(`/users/${userId}/usage`, { token: key })
    ).json()) as { tokens_today: number };
    expect(usage.tokens_today).toBe(tokens);
    const calls = stack.llm.chats.length;
    const refused = await chat(key, 'one more?');
    expect(refused.status).toBe(429);
    expect(((await refused.json()) as { detail: string }).detail).toContain(
      `${LIMIT} model tokens`,
    );
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(stack.llm.chats).toHaveLength(calls); // the refused chat never reached the model
  }

  it('counts the tool step of a chat whose client left during the answer', async () => {
    const key = await limitedUser('leaver');
    const words = Array.from({ length: 60 }, (_, i) => `w${i}`).join(' ');
    stack.llm.enqueue(
      reply.toolCalls([{ name: 'list_reminders', args: {} }], { usage: TOOL_STEP }),
      reply.text(words, { chunks: 60, delayMs: 50 }),
    );
    const controller = new AbortController();
    const response = await chat(key, 'tell me a long story', controller.signal);
    expect(response.status).toBe(200);
    await readUntil(response, (raw) => raw.includes('w3'));
    controller.abort();
    expect((await stack.llm.waitForClientClose(5_000)).outcome).toBe('client-closed');
    // The interrupted turn is stored with its run (one statement): then the run counts.
    await waitFor(async () => {
      const history = (await (
        await stack.parley.fetch('/users/leaver/history', { token: key })
      ).json()) as { turns: { status: string | null }[] };
      return history.turns[0]?.status === 'interrupted';
    });
    await expectDayUsedUp('leaver', key, TOOL_STEP.prompt + TOOL_STEP.completion);
  });

  it('counts the tool step of a chat whose model failed after it', async () => {
    const key = await limitedUser('failed');
    stack.llm.enqueue(
      reply.toolCalls([{ name: 'list_reminders', args: {} }], { usage: TOOL_STEP }),
      reply.text('The answer breaks off here and never', { chunks: 6, disconnectAfter: 3 }),
    );
    const stream = await readChat(await chat(key, 'and my reminders?'));
    expect(stream.error).toBeDefined();
    expect(stream.ended).toBe(true);
    await expectDayUsedUp('failed', key, TOOL_STEP.prompt + TOOL_STEP.completion);
  });

  it('counts what the model server reported for an answer it cut', async () => {
    const key = await limitedUser('cut');
    stack.llm.enqueue(
      reply.text('Half an ans', { finishReason: 'abort', usage: { prompt: 90, completion: 30 } }),
    );
    const stream = await readChat(await chat(key, 'hello?'));
    expect(stream.error).toBeDefined();
    expect(stream.ended).toBe(true);
    await expectDayUsedUp('cut', key, 120);
  });
});
