import { type ChatStream, readChat } from './chat-stream.ts';
import { type ReplySource, reply } from './fake-llm-server.ts';
import type { ReminderStack } from './reminder-stack.ts';
import type { RunningParley } from './start-parley.ts';
import { waitFor } from './wait-for.ts';

/**
 * Moves the stack's test clock to `iso` and waits until every running process has finished an
 * automation tick that read it (its runs included): time moves in steps, never by sleeping.
 */
export async function automationTickAt(
  stack: ReminderStack,
  iso: string,
  processes: readonly RunningParley[] = [stack.parley],
): Promise<void> {
  const marks = processes.map((p) => p.logs.length);
  stack.setClock(iso);
  const logged = new Date(iso).toISOString();
  const deadline = Date.now() + 60_000;
  const ticked = () =>
    processes.every((p, i) =>
      p.logs.slice(marks[i]).some((l) => l.msg === 'automation tick' && l.now === logged),
    );
  while (!ticked()) {
    if (Date.now() > deadline) throw new Error(`no automation tick at ${iso}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** A JSON request as the stack's administrator (or `token`); the body as the test reads it. */
export async function call(
  parley: RunningParley,
  method: string,
  path: string,
  body?: unknown,
  token?: string,
  // biome-ignore lint/suspicious/noExplicitAny: a test reads the JSON it expects, and asserts it
): Promise<{ status: number; body: any }> {
  const response = await parley.fetch(path, {
    method,
    ...(token === undefined ? {} : { token }),
    ...(body === undefined
      ? {}
      : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

/**
 * The user's own chat under way: the model holds its answer ("Here is my own answer.") until
 * `release`, and has `next` (an automation's reply) queued after it. Resolves once the model
 * was asked; `runClaimed` then waits until a run of the automation has started (and waits for
 * the user's turn).
 */
export async function ownChatUnderWay(
  stack: ReminderStack,
  userId: string,
  next: ReplySource,
): Promise<{
  own: Promise<ChatStream>;
  release: () => void;
  /** The model's requests before the user's own chat. */
  chats: number;
  /** Log lines before the user's own chat. */
  mark: number;
  runClaimed: (automationId: string) => Promise<void>;
}> {
  let release = () => {};
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  const chats = stack.llm.chats.length;
  stack.llm.enqueue(reply.text('Here is my own answer.', { pace: () => held }), next);
  const own = stack.parley
    .fetch('/chat', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'A question of mine', user_id: userId }),
    })
    .then(readChat);
  await waitFor(() => stack.llm.chats.length > chats);
  const mark = stack.parley.logs.length;
  const runClaimed = (automationId: string) =>
    waitFor(() =>
      stack.parley.logs
        .slice(mark)
        .some((l) => l.msg === 'automation run claimed' && l.automationId === automationId),
    );
  return { own, release, chats, mark, runClaimed };
}
