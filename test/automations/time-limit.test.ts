import { describe, expect, it } from 'vitest';
import { automationTickAt, call, ownChatUnderWay } from '../support/automation-ticks.ts';
import { ENGINES } from '../support/engines.ts';
import { reply } from '../support/fake-llm-server.ts';
import { useReminderStack } from '../support/reminder-stack.ts';
import { waitFor } from '../support/wait-for.ts';

/**
 * A run has a chat's time limit (ANSWER_MAX_SECONDS, here its least, 10 s): a model still
 * writing after it is stopped, the run is recorded as failed with the reason, and nothing half
 * written is delivered. The model writes one word a second, so the limit binds long before the
 * stall timeout or the job's own budget would.
 */
describe.each(ENGINES)('an automation run at its time limit on the %s engine', (engine) => {
  const stack = useReminderStack(engine, {
    start: '2030-05-01T00:00:00Z',
    env: { ANSWER_MAX_SECONDS: '10' },
  });

  it('is stopped, recorded as failed with the reason, and not delivered', async () => {
    expect((await stack().putProfile('slow', { telegram_chat_id: '5401' })).status).toBe(200);
    const made = await call(stack().parley, 'POST', '/users/slow/automations', {
      prompt: 'Write the long report',
      schedule: { type: 'daily', time: '08:00' },
    });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    const words = Array.from({ length: 40 }, (_, i) => `word${i}`).join(' ');
    stack().llm.enqueue(reply.text(words, { chunks: 40, delayMs: 1_000 }));
    await automationTickAt(stack(), '2030-05-01T08:00:00Z');
    const runs = (await call(stack().parley, 'GET', `/users/slow/automations/${made.body.id}/runs`))
      .body.runs as { status: string; error: string | null }[];
    expect(runs).toHaveLength(1);
    expect(runs[0]?.status).toBe('failed');
    expect(runs[0]?.error).toMatch(/^answer_timeout: the answer took longer than 10 s/);
    expect(stack().telegram.visibleIn('5401')).toEqual([]);
    const listed = (await call(stack().parley, 'GET', '/users/slow/automations')).body
      .automations[0];
    expect(listed).toMatchObject({ status: 'active', next_run_at: '2030-05-02T08:00:00.000Z' });
  });

  it('does not hold back another user’s run while one is answered', async () => {
    const create = async (userId: string, time: string) => {
      const made = await call(stack().parley, 'POST', `/users/${userId}/automations`, {
        prompt: `Report at ${time}`,
        schedule: { type: 'daily', time },
      });
      expect(made.status, JSON.stringify(made.body)).toBe(201);
      return made.body.id as string;
    };
    const runsOf = async (userId: string, id: string) =>
      (await call(stack().parley, 'GET', `/users/${userId}/automations/${id}/runs`)).body.runs as {
        status: string;
      }[];
    const long = await create('long', '08:30');
    const quick = await create('quick', '08:31');
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    stack().llm.enqueue(
      reply.text('The long report.', { pace: () => held }),
      reply.text('The quick note.'),
    );
    stack().setClock('2030-05-01T08:30:00Z');
    await waitFor(async () => (await runsOf('long', long))[0]?.status === 'running');
    // A minute on (within the first run's claim), another user's automation is due: it runs
    // while the long one answers.
    stack().setClock('2030-05-01T08:31:30Z');
    await waitFor(async () => (await runsOf('quick', quick))[0]?.status === 'done', 8_000);
    expect((await runsOf('long', long))[0]?.status).toBe('running');
    release();
    await waitFor(async () => (await runsOf('long', long))[0]?.status === 'done');
  });

  it('runs nine users’ automations due at once one after another, without a poll’s wait', async () => {
    const users = Array.from({ length: 9 }, (_, i) => `early${i}`);
    const ids: string[] = [];
    for (const userId of users) {
      const made = await call(stack().parley, 'POST', `/users/${userId}/automations`, {
        prompt: 'Early news',
        schedule: { type: 'daily', time: '08:40' },
      });
      expect(made.status, JSON.stringify(made.body)).toBe(201);
      ids.push(made.body.id as string);
    }
    stack().llm.enqueue(...users.map(() => reply.text('The early news.')));
    const done = async () => {
      const runs = await Promise.all(
        users.map(
          async (userId, i) =>
            (await call(stack().parley, 'GET', `/users/${userId}/automations/${ids[i]}/runs`)).body
              .runs as { status: string }[],
        ),
      );
      return runs.every((r) => r[0]?.status === 'done');
    };
    const started = Date.now();
    stack().setClock('2030-05-01T08:40:00Z');
    await waitFor(done, 20_000);
    // Four lanes: three rounds. A lane that waited for its next poll (5 s) after each run took
    // more than 10 s.
    expect(Date.now() - started).toBeLessThan(7_000);
  });

  it('counts from its turn: waiting for the user’s own chat is not taken from its answer', async () => {
    const made = await call(stack().parley, 'POST', '/users/chatty/automations', {
      prompt: 'Sum up the news',
      schedule: { type: 'daily', time: '09:00' },
    });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    // The user's own answer, held open; then the run's, 6 s long: 5 s of waiting and 6 s of
    // answering pass the 10 s limit together, not one after the other.
    const { own, release, runClaimed } = await ownChatUnderWay(
      stack(),
      'chatty',
      reply.text('one two three four five six', { chunks: 6, delayMs: 1_000 }),
    );
    const asked = Date.now();
    const started = await call(
      stack().parley,
      'POST',
      `/users/chatty/automations/${made.body.id}/run`,
    );
    expect(started.status).toBe(202);
    // The run has started, and waits for the user's turn.
    await runClaimed(made.body.id);
    await new Promise((resolve) => setTimeout(resolve, 5_000 - (Date.now() - asked)));
    release();
    expect((await own).text).toBe('Here is my own answer.');
    const runs = async () =>
      (await call(stack().parley, 'GET', `/users/chatty/automations/${made.body.id}/runs`)).body
        .runs as { status: string; error: string | null }[];
    await waitFor(async () => ['done', 'failed'].includes((await runs())[0]?.status ?? ''), 30_000);
    expect(Date.now() - asked).toBeGreaterThan(10_500);
    expect((await runs())[0]).toMatchObject({ status: 'done', error: null });
  });
});
