import OpenAI from 'openai';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type EngineStack, startEngineStack } from '../support/chat-stack.ts';
import { ENGINES } from '../support/engines.ts';
import { type ChatCompletionRequest, reply } from '../support/fake-llm-server.ts';

/**
 * CHAT_MAX_STEPS bounds the model calls of one answer. A model that calls tools on every
 * call (small local models do) used to be cut off after its last tool call: the answer was
 * whatever it said before looking ("Let me look."), or nothing, and it ended as a whole one.
 */
describe.each(ENGINES)('the step limit on the %s engine', (engine) => {
  let stack: EngineStack;

  beforeAll(async () => {
    stack = await startEngineStack(engine, { CHAT_MAX_STEPS: '3' });
  });
  afterEach(() => {
    stack.llm.respond(() => undefined);
    stack.llm.assertNoUnexpected();
  });
  afterAll(() => stack?.stop());

  /** A model that looks things up again and again, and answers once told it may not. */
  const eagerModel = (request: ChatCompletionRequest) =>
    request.tool_choice === 'none'
      ? reply.text('You have no reminders.')
      : reply.toolCalls([{ name: 'list_reminders', args: {} }], { text: 'Let me look. ' });

  it('asks the last allowed call to answer from what the tools found (/chat)', async () => {
    stack.llm.respond(eagerModel);
    const before = stack.llm.chats.length;
    const stream = await stack.chat('ruth', 'What are my reminders?');
    const calls = stack.llm.chats.slice(before);
    expect(calls.map((chat) => chat.body.tool_choice)).toEqual(['auto', 'auto', 'none']);
    // The last call still reads the tool results the one before it asked for.
    expect(calls[2]?.body.messages.at(-1)?.role).toBe('tool');
    expect(stream.error).toBeUndefined();
    expect(stream.text).toBe('Let me look. Let me look. You have no reminders.');
  });

  it('gives an OpenAI client the answer, not the words before the last lookup', async () => {
    stack.llm.respond(eagerModel);
    const client = new OpenAI({ baseURL: `${stack.parley.url}/v1`, apiKey: 'x', maxRetries: 0 });
    const completion = await client.chat.completions.create({
      model: 'parley',
      messages: [{ role: 'user', content: 'What are my reminders?' }],
    });
    expect(completion.choices[0]?.message.content).toBe(
      'Let me look. Let me look. You have no reminders.',
    );
    expect(completion.choices[0]?.finish_reason).toBe('stop');
  });
});
