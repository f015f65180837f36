import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readChat } from '../support/chat-stream.ts';
import { recordingsDir } from '../support/fake-llm/recording.ts';
import { type FakeLlmServer, reply, startFakeLlmServer } from '../support/fake-llm-server.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';

/**
 * Every recorded provider stream, through the whole chat path: what the user reads, what the
 * tool loop sends back to the model, and what the next chat finds in its history. The
 * snapshot was written by the chat loop built on the AI SDK's `streamText`; any other loop
 * must produce it unchanged. The loop does not touch storage, so one engine is enough here
 * (the failure paths run on both engines in chat.test.ts).
 *
 * This is also the test that an upgrade of the AI SDK must pass: the tool loop calls the
 * functions of `ai/internal`, which the SDK may change in any release (package.json pins it
 * exactly). A name that disappeared stops Parley from starting here; test/assistant/
 * sdk-internals.test.ts then names it.
 */
describe('recorded provider streams through POST /chat', () => {
  const recordings = readdirSync(recordingsDir)
    .filter((name) => name !== 'index.json')
    .sort();
  let llm: FakeLlmServer;
  let dataDir: string;
  let parley: RunningParley;

  beforeAll(async () => {
    llm = await startFakeLlmServer();
    dataDir = mkdtempSync(join(tmpdir(), 'parley-recorded-'));
    parley = await startParley({
      dataDir,
      env: {
        API_TOKEN: 'recorded-token',
        LLM_BASE_URL: llm.url,
        LLM_MODEL: 'fake-chat',
        LLM_MAX_RETRIES: '0',
        LLM_CHUNK_TIMEOUT_MS: '5000',
      },
    });
    // A recording that calls a tool gets this answer to the follow-up call.
    llm.respond(reply.text('Done with the tools.'));
  });
  afterAll(async () => {
    await parley?.stop();
    await llm?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const ask = async (body: Record<string, unknown>) =>
    readChat(
      await parley.fetch('/chat', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      }),
    );

  it.each(recordings)('%s', async (file) => {
    const user = `replay-${recordings.indexOf(file)}`;
    const first = llm.chats.length;
    llm.enqueue(reply.replay(file));
    const answer = await ask({ message: 'hi', user_id: user, show_thinking: true });
    const calls = llm.chats.length - first;

    llm.enqueue(reply.text('ok'));
    const next = await ask({ message: 'again', user_id: user });
    llm.assertNoUnexpected();

    const ids = new Map<string, string>();
    expect(
      {
        text: answer.text,
        error: answer.error,
        ended: answer.ended && next.ended,
        modelCalls: calls,
        // The tool loop's later calls, then the next chat's history.
        sentBack: llm.chats.slice(first + 1).map((exchange) =>
          normaliseIds(
            exchange.body.messages.filter((m) => m.role !== 'system'),
            ids,
          ),
        ),
      },
      'the chat path answers this recorded stream differently. After an upgrade of ai or ' +
        '@ai-sdk/*: what src/assistant/tool-loop.ts takes from ai/internal changed behaviour; ' +
        'read the release, adapt the loop, do not rewrite the snapshot',
    ).toMatchSnapshot();
  });
});

/**
 * Tool-call ids the provider makes up when a recording has none are random: each id becomes
 * `id-N`, numbered in order of first appearance, so the same call keeps the same name.
 */
function normaliseIds(value: unknown, ids: Map<string, string>): unknown {
  if (Array.isArray(value)) return value.map((item) => normaliseIds(item, ids));
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, field]) => {
      if ((key === 'id' || key === 'tool_call_id') && typeof field === 'string') {
        if (!ids.has(field)) ids.set(field, `id-${ids.size + 1}`);
        return [key, ids.get(field)];
      }
      return [key, normaliseIds(field, ids)];
    }),
  );
}
