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
        yield `**Assistant:**\n\n${closedFences(message.text)}${cut}\n\n`;
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

/**
 * The answer with a code block it left open closed (an answer cut off mid-block, or a model's
 * slip): otherwise every turn after it would read as code in the file.
 */
function closedFences(text: string): string {
  let open: { char: string; length: number } | undefined;
  for (const line of text.split('\n')) {
    // The rest of the line is anything: with `.*$`, a carriage return or U+2028 after a run of
    // backticks failed the match at every length of the run (200,000 of them: ~10 s).
    const fence = /^ {0,3}(`{3,}|~{3,})([\s\S]*)/.exec(line);
    if (!fence) continue;
    const [, marks = '', rest = ''] = fence;
    const char = marks[0] as string;
    if (!open) {
      // A backtick fence's info string has no backtick (else it is inline code).
      if (char !== '`' || !rest.includes('`')) open = { char, length: marks.length };
    } else if (char === open.char && marks.length >= open.length && !rest.trim()) {
      open = undefined;
    }
  }
  return open ? `${text}\n${open.char.repeat(open.length)}` : text;
}
