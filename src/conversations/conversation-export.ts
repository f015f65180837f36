import type { Conversation } from '../storage/conversation-repository.ts';
import type { ExportedMessage } from '../storage/turn-repository.ts';

/**
 * One conversation as JSON, written piece by piece: every message of every version, with the
 * turn it belongs to (`run_id`), the turn it follows (`parent_run_id`) and whether it is on
 * the active path, so the whole tree can be rebuilt.
 */
export async function* conversationJson(
  conversation: Conversation,
  pages: AsyncIterable<ExportedMessage[]>,
  now: Date,
): AsyncGenerator<string> {
  yield `{"exported_at":${JSON.stringify(now.toISOString())},"conversation":${JSON.stringify({
    id: conversation.id,
    title: conversation.title,
    title_source: conversation.titleSource,
    pinned: conversation.pinned,
    created_at: conversation.createdAt.toISOString(),
    updated_at: conversation.updatedAt.toISOString(),
    leaf_run_id: conversation.leafRunId,
  })},"messages":[`;
  let first = true;
  for await (const page of pages) {
    for (const message of page) {
      yield (first ? '' : ',') +
        JSON.stringify({
          run_id: message.runId,
          parent_run_id: message.parentRunId,
          role: message.role,
          text: message.text,
          interrupted: message.interrupted,
          on_path: message.onPath,
          created_at: message.createdAt.toISOString(),
        });
      first = false;
    }
  }
  yield ']}\n';
}

/** One conversation as Markdown, for people: the active path, each question and its answer. */
export async function* conversationMarkdown(
  conversation: Conversation,
  pages: AsyncIterable<ExportedMessage[]>,
): AsyncGenerator<string> {
  yield `# ${conversation.title || 'Conversation'}\n\n`;
  for await (const page of pages) {
    for (const message of page) {
      if (!message.onPath || !message.text) continue;
      if (message.role === 'user') {
        yield `## ${message.createdAt.toISOString()}\n\n**You:**\n\n${quoteLines(message.text)}\n\n`;
      } else if (message.role === 'assistant') {
        const cut = message.interrupted ? '\n\n*(interrupted)*' : '';
        yield `**Assistant:**\n\n${message.text}${cut}\n\n`;
      }
    }
  }
}

/** The user's words as a block quote, so their Markdown cannot start a heading of the file. */
const quoteLines = (text: string) =>
  text
    .split('\n')
    .map((line) => `> ${line}`)
    .join('\n');
