import { afterAll, describe, expect, it } from 'vitest';
import { engineSetup } from '../support/engine-setup.ts';
import { ENGINES } from '../support/engines.ts';
import { reply } from '../support/fake-llm-server.ts';
import { readThenLeave, textOf } from '../support/resumable.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';
import { waitFor } from '../support/wait-for.ts';

/** The smallest JOB_LEASE_SECONDS allows: a holder silent this long is dead. */
const LEASE_SECONDS = 10;
/** QUIET_FLUSH_MS (1 s) and a margin: what a client saw of a run nobody else follows is stored. */
const STORED_MS = 2_500;

interface HistoryTurn {
  run_id: string;
  question: string;
  answer: string;
  interrupted: boolean;
  status: string;
}

/**
 * A process killed while it generates a resumable answer that nobody listens to any more: the
 * question and the answer as far as it was stored are kept in the conversation, marked
 * interrupted, by the next process that looks (on the embedded engine the restarted one, at
 * start; with replicas, any replica within a lease or two), and they are stored once.
 */
describe.each(ENGINES)('a killed holder on the %s engine', (engine) => {
  const cleanups: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  it("keeps the question and the partial answer in the user's conversation", async () => {
    const { llm, dataDir, env, cleanup } = await engineSetup(engine, {
      JOB_LEASE_SECONDS: String(LEASE_SECONDS),
    });
    cleanups.push(cleanup);
    const question = 'What did the lease say about pets?';
    const first = await startParley({ dataDir, env });
    // A few words, then nothing: the process dies before the model would have finished.
    llm.enqueue(reply.text('Pets are allowed with a deposit of two hundred.', { stallAfter: 3 }));
    const leaving = new AbortController();
    const response = await first.fetch('/chat', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ user_id: 'tenant', message: question, resumable: true }),
      signal: leaving.signal,
    });
    expect(response.status).toBe(200);
    const runId = response.headers.get('x-parley-run-id') as string;
    const seen = textOf(await readThenLeave(response, leaving, (events) => textOf(events) !== ''));
    await new Promise((resolve) => setTimeout(resolve, STORED_MS));
    first.process.kill('SIGKILL');
    await new Promise((resolve) => first.process.once('exit', resolve));

    const second = await startParley({ dataDir, env });
    cleanups.push(async () => void (await second.stop()));
    const turns = async () =>
      ((await (await second.fetch('/users/tenant/history')).json()) as { turns: HistoryTurn[] })
        .turns;
    // With replicas, a dead holder is one silent past the lease, looked for every lease.
    await waitFor(
      async () => (await turns()).some((turn) => turn.run_id === runId),
      engine === 'server' ? (2 * LEASE_SECONDS + 5) * 1000 : 10_000,
    );
    const kept = (await turns()).filter((turn) => turn.run_id === runId);
    expect(kept).toHaveLength(1);
    expect(kept[0]).toMatchObject({
      question,
      answer: seen,
      interrupted: true,
      status: 'interrupted',
    });
    // A client that comes back to the run reads its end, which says why.
    const events = await second.fetch(`/users/tenant/runs/${runId}/events`);
    expect(await events.text()).toContain('run_interrupted');
    await expectLoggedByCode(second);
  }, 120_000);
});

/** The ending is logged by its code, without the user's words. */
async function expectLoggedByCode(parley: RunningParley): Promise<void> {
  const line = await parley.waitForLog((log) => log.msg === 'a run whose holder died was ended');
  expect(line.code).toBe('run_interrupted');
  expect(parley.output()).not.toContain('lease say about pets');
}
