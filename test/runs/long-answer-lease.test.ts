import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EngineStack, startEngineStack } from '../support/chat-stack.ts';
import { ENGINES } from '../support/engines.ts';
import { reply } from '../support/fake-llm-server.ts';
import { holdAt, lastEventId, readAll, readThenLeave, textOf } from '../support/resumable.ts';
import { waitFor } from '../support/wait-for.ts';

/** The smallest JOB_LEASE_SECONDS allows: a holder silent this long counts as dead. */
const LEASE_SECONDS = 10;
/** Longer than two leases: every check for dead holders has run by then at least once. */
const HELD_MS = 2.5 * LEASE_SECONDS * 1000;

/**
 * An answer that takes longer than the lease, with nobody listening for most of it, is not
 * taken for one whose holder died: on the embedded engine, where the one process has no
 * heartbeat to keep (it knows its own runs), and on a server, where it keeps one. The model
 * holds the answer mid-way for two and a half leases; a client that comes back afterwards
 * gets the rest and the end, with no interruption, and the turn is stored whole.
 */
describe.each(ENGINES)('an answer longer than the lease on the %s engine', (engine) => {
  let stack: EngineStack;

  beforeAll(async () => {
    stack = await startEngineStack(engine, { JOB_LEASE_SECONDS: String(LEASE_SECONDS) });
  }, 120_000);
  afterAll(() => stack?.stop());

  it('is not taken for a dead one while nobody listens, and ends whole', async () => {
    const text = 'A slow answer, held for longer than the lease, then finished.';
    const hold = holdAt((_, written) => written === 'A slow answer,');
    stack.llm.enqueue(reply.text(text, { pace: hold.pace }));
    const leaving = new AbortController();
    const response = await stack.parley.fetch('/chat', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ user_id: 'patient', message: 'take your time', resumable: true }),
      signal: leaving.signal,
    });
    expect(response.status).toBe(200);
    const runId = response.headers.get('x-parley-run-id') as string;
    await hold.reached;
    const before = await readThenLeave(response, leaving, (events) => textOf(events) !== '');
    await new Promise((resolve) => setTimeout(resolve, HELD_MS));

    // Still running, and the client that comes back follows it live.
    const resumed = await stack.parley.fetch(`/users/patient/runs/${runId}/events`, {
      headers: { 'last-event-id': String(lastEventId(before)) },
    });
    expect(resumed.status).toBe(200);
    hold.release();
    const after = (await readAll(resumed)).events;
    expect(textOf(before) + textOf(after)).toBe(text);
    expect(after.some((event) => event.data.includes('__error'))).toBe(false);
    expect(after.slice(-2).map((event) => event.data)).toEqual([
      JSON.stringify({ __done: true, run_id: runId }),
      '[DONE]',
    ]);
    const turns = async () =>
      (
        (await (await stack.parley.fetch('/users/patient/history')).json()) as {
          turns: { run_id: string; answer: string; status: string }[];
        }
      ).turns;
    await waitFor(async () => (await turns()).some((turn) => turn.run_id === runId));
    expect(await turns()).toEqual([
      expect.objectContaining({ run_id: runId, answer: text, status: 'completed' }),
    ]);
    expect(stack.parley.logs.some((line) => line.msg === 'a run whose holder died was ended')).toBe(
      false,
    );
    stack.llm.assertNoUnexpected();
  }, 90_000);
});
