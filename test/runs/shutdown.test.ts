import { afterAll, describe, expect, it } from 'vitest';
import { engineSetup } from '../support/engine-setup.ts';
import { ENGINES } from '../support/engines.ts';
import { reply } from '../support/fake-llm-server.ts';
import { lastEventId, readAll, readThenLeave, textOf } from '../support/resumable.ts';
import { startParley } from '../support/start-parley.ts';

/**
 * A resumable answer nobody listens to is still bounded by shutdown: the server stops at the
 * end of its grace period (not when the answer would have ended), keeps the answer as far as
 * it went, and after the restart a client that comes back reads it to an end that says why.
 */
describe.each(ENGINES)('a detached answer at shutdown on the %s engine', (engine) => {
  const cleanups: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  it('is stopped with the grace period, kept, and replayed after the restart', async () => {
    const { llm, dataDir, env, cleanup } = await engineSetup(engine, {
      SHUTDOWN_GRACE_MS: '1000',
    });
    cleanups.push(cleanup);
    const first = await startParley({ dataDir, env });
    // A few words, then nothing: only the shutdown can end it.
    llm.enqueue(reply.text('Begun but never finished by the model.', { stallAfter: 3 }));
    const leaving = new AbortController();
    const response = await first.fetch('/chat', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ user_id: 'sleeper', message: 'go', resumable: true }),
      signal: leaving.signal,
    });
    const runId = response.headers.get('x-parley-run-id') as string;
    const before = await readThenLeave(response, leaving, (events) => textOf(events) !== '');
    const stoppingAt = Date.now();
    expect(await first.stop('SIGTERM')).toBe(0);
    expect(Date.now() - stoppingAt).toBeLessThan(10_000);

    const second = await startParley({ dataDir, env });
    cleanups.push(async () => void (await second.stop()));
    const rest = (
      await readAll(
        await second.fetch(`/users/sleeper/runs/${runId}/events`, {
          headers: { 'last-event-id': String(lastEventId(before)) },
        }),
      )
    ).events;
    const error = rest.find((event) => event.data.includes('__error'));
    expect(JSON.parse(error?.data ?? '{}').__error.code).toBe('shutting_down');
    expect(rest.slice(-2).map((event) => event.data)).toEqual([
      JSON.stringify({ __done: true, run_id: runId }),
      '[DONE]',
    ]);
    const history = (await (await second.fetch('/users/sleeper/history')).json()) as {
      turns: { run_id: string; answer: string; status: string }[];
    };
    expect(history.turns.find((turn) => turn.run_id === runId)).toMatchObject({
      status: 'interrupted',
      answer: textOf(before) + textOf(rest),
    });
  }, 120_000);
});
