import { expect } from 'vitest';
import { readChat } from './chat-stream.ts';
import { type FakeLlmServer, reply } from './fake-llm-server.ts';
import type { RunningParley } from './start-parley.ts';

/** What search_documents hands the model. */
export interface SearchOutput {
  retrieval: 'lexical' | 'hybrid';
  hits: { source: string; score: unknown; text: string }[];
}

/**
 * Runs `search_documents(query)` the way a user's chat does: the fake model calls the tool,
 * then answers. Returns the tool's output as the model received it in its next request, after
 * checking that the chat itself ended without an error.
 */
export async function searchThroughChat(
  parley: RunningParley,
  llm: FakeLlmServer,
  query: string,
  userId = 'alice',
): Promise<SearchOutput> {
  llm.enqueue(reply.toolCalls([{ name: 'search_documents', args: { query } }]), reply.text('.'));
  const response = await parley.fetch('/chat', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ message: query, user_id: userId }),
  });
  expect((await readChat(response)).error).toBeUndefined();
  const tool = llm.chats.at(-1)?.body.messages.findLast((message) => message.role === 'tool');
  return JSON.parse(String(tool?.content)) as SearchOutput;
}
