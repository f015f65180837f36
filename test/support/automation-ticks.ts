import type { ReminderStack } from './reminder-stack.ts';
import type { RunningParley } from './start-parley.ts';

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
