import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EngineStack, startEngineStack } from '../support/chat-stack.ts';
import { readChat } from '../support/chat-stream.ts';
import { ENGINES } from '../support/engines.ts';
import { reply } from '../support/fake-llm-server.ts';

/**
 * A user's reminders are bounded (REMINDERS_PER_USER): without a bound the assistant could set
 * them without end, and the list, which is read whole, grew with them. The model's calls of
 * one step run together, so the bound must hold for calls at once, not only one by one.
 */
describe.each(ENGINES)('the number of reminders a user keeps, on the %s engine', (engine) => {
  let stack: EngineStack;
  beforeAll(async () => {
    stack = await startEngineStack(engine, { REMINDERS_PER_USER: '2' });
  });
  afterAll(() => stack?.stop());

  it('sets at most REMINDERS_PER_USER, also from calls at once, and tells the model why', async () => {
    const set = (title: string) => ({ name: 'set_reminder', args: { title, date: '2099-01-01' } });
    stack.llm.enqueue(
      reply.toolCalls([set('One'), set('Two'), set('Three'), set('Four')]),
      reply.text('Done.'),
    );
    const stream = await readChat(
      await stack.parley.fetch('/chat', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ message: 'remind me of four things', user_id: 'busy' }),
      }),
    );
    expect(stream.text).toBe('Done.');
    const listed = (await (await stack.parley.fetch('/reminders/busy')).json()) as {
      reminders: unknown[];
    };
    expect(listed.reminders).toHaveLength(2);
    const results = stack.llm.chats
      .at(-1)
      ?.body.messages.filter((m) => m.role === 'tool')
      .map((m) => String(m.content));
    expect(
      results?.filter((r) => r.includes('Your reminders are at the limit (2): delete some first.')),
    ).toHaveLength(2);
    // Another user is not held by this one's.
    stack.llm.enqueue(reply.toolCalls([set('Mine')]), reply.text('Set.'));
    await readChat(
      await stack.parley.fetch('/chat', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ message: 'remind me', user_id: 'calm' }),
      }),
    );
    const other = (await (await stack.parley.fetch('/reminders/calm')).json()) as {
      reminders: unknown[];
    };
    expect(other.reminders).toHaveLength(1);
    stack.llm.assertNoUnexpected();
  });
});
