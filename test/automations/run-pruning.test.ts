import { describe, expect, it, onTestFinished } from 'vitest';
import { call } from '../support/automation-ticks.ts';
import { ENGINES } from '../support/engines.ts';
import { reply } from '../support/fake-llm-server.ts';
import { useReminderStack } from '../support/reminder-stack.ts';
import { waitFor } from '../support/wait-for.ts';

// biome-ignore lint/suspicious/noExplicitAny: a test reads the JSON it expects, and asserts it
type Json = any;

/**
 * Pruning (AUTOMATION_RUNS_KEPT, here 1) deletes settled runs only: a run under way or waiting
 * while newer occurrences are skipped is kept, runs, and is listed with its answer; and the
 * export says what the runs list says. Answers may take a day (ANSWER_MAX_SECONDS), so a run's
 * claim (twice that) outlasts the two days the clock moves while it is held open.
 */
describe.each(ENGINES)('pruning an automation’s runs on the %s engine', (engine) => {
  const stack = useReminderStack(engine, {
    start: '2030-06-03T07:00:00Z', // a Monday
    env: { AUTOMATION_RUNS_KEPT: '1', ANSWER_MAX_SECONDS: '86400' },
  });
  const api = (method: string, path: string, body?: unknown) =>
    call(stack().parley, method, path, body);
  const create = async (userId: string, body: Record<string, unknown>) => {
    const made = await api('POST', `/users/${userId}/automations`, body);
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    return made.body.id as string;
  };
  const runs = async (userId: string, id: string) =>
    ((await api('GET', `/users/${userId}/automations/${id}/runs`)).body.runs as Json[]).map(
      (run) => `${run.occurrence} ${run.manual ? 'manual' : 'scheduled'} ${run.status}`,
    );
  const exported = async (userId: string) =>
    ((await (await stack().parley.fetch(`/users/${userId}/export`)).json()) as Json).automations;

  it('keeps a run that is running or queued while newer occurrences are skipped', async () => {
    // Monday and Tuesday at 09:00: Tuesday's is a day late by Wednesday 09:00, and skipped.
    const held = await create('busy', {
      prompt: 'Weekly plan',
      schedule: { type: 'weekly', days: ['mon', 'tue'], time: '09:00' },
    });
    // Tuesdays at 08:30: a day late (skipped) by then too. Made later: listed second.
    stack().setClock('2030-06-03T07:01:00Z');
    const waiting = await create('busy', {
      prompt: 'Tuesday news',
      schedule: { type: 'weekly', days: ['tue'], time: '08:30' },
    });
    let release = () => {};
    const answering = new Promise<void>((resolve) => {
      release = resolve;
    });
    onTestFinished(() => release()); // a failed assertion leaves no run held for the next test
    stack().llm.enqueue(reply.text('Planned the week.', { pace: () => answering }));
    stack().setClock('2030-06-03T09:00:00Z');
    const running = '2030-06-03T09:00:00.000Z scheduled running';
    await waitFor(async () => (await runs('busy', held))[0] === running, 30_000);
    // Asked for while the user's other automation runs: it waits for that one to end.
    stack().setClock('2030-06-03T09:10:00Z');
    expect((await api('POST', `/users/busy/automations/${waiting}/run`)).status).toBe(202);

    // The tick that started the held run waits for it up to a minute, of real time or of its
    // clock: moved on two days, it stops waiting at once, and the next tick skips.
    stack().setClock('2030-06-05T09:00:00Z');
    const skipped = [
      ['2030-06-04T09:00:00.000Z scheduled skipped', running],
      ['2030-06-04T08:30:00.000Z scheduled skipped', '2030-06-03T09:10:00.000Z manual queued'],
    ];
    // One sweep skips both, one after the other: wait for the two lists.
    const lists = async () => [await runs('busy', held), await runs('busy', waiting)];
    await waitFor(async () => JSON.stringify(await lists()) === JSON.stringify(skipped), 30_000);
    expect(await lists()).toEqual(skipped);

    stack().setClock('2030-06-05T09:00:30Z');
    stack().llm.enqueue(reply.text('The news of Tuesday.'));
    release();
    // Each one ran, and only its newest settled run is kept: the one that just finished. (The
    // log's "automation run done" comes before the run is recorded and the older ones pruned.)
    const kept = [
      ['2030-06-03T09:00:00.000Z scheduled done'],
      ['2030-06-03T09:10:00.000Z manual done'],
    ];
    await waitFor(async () => JSON.stringify(await lists()) === JSON.stringify(kept));
    expect(await lists()).toEqual(kept);
    const listed = (await api('GET', '/users/busy/automations')).body;
    expect(listed.unread).toBe(2); // both answers wait for the user in the web client
    expect(listed.automations).toMatchObject([
      { id: held, next_run_at: '2030-06-10T09:00:00.000Z' },
      { id: waiting, next_run_at: '2030-06-11T08:30:00.000Z' },
    ]);
    const conversation = (
      await api('GET', `/users/busy/conversations/${listed.automations[0].conversation_id}`)
    ).body;
    expect(JSON.stringify(conversation)).toContain('Planned the week.');
    // The export says what the list says: the kept runs, not the skipped ones pruned.
    expect(
      (await exported('busy')).map((automation: Json) =>
        automation.runs.map((run: Json) => [new Date(run.occurrence).toISOString(), run.status]),
      ),
    ).toEqual([[['2030-06-03T09:00:00.000Z', 'done']], [['2030-06-03T09:10:00.000Z', 'done']]]);
  });

  it('exports the kept runs only, and nothing once the user is deleted', async () => {
    stack().setClock('2030-06-06T07:00:00Z');
    const id = await create('exporter', {
      prompt: 'Daily digest',
      schedule: { type: 'daily', time: '23:00' },
    });
    for (const [at, answer] of [
      ['2030-06-06T08:00:00Z', 'First digest.'],
      ['2030-06-06T08:30:00Z', 'Second digest.'],
    ] as const) {
      stack().setClock(at);
      stack().llm.enqueue(reply.text(answer));
      expect((await api('POST', `/users/exporter/automations/${id}/run`)).status).toBe(202);
      // Recorded done, then the older run pruned (a statement after): wait for both.
      const done = `${new Date(at).toISOString()} manual done`;
      await waitFor(async () => (await runs('exporter', id)).join() === done);
    }
    expect(await runs('exporter', id)).toEqual(['2030-06-06T08:30:00.000Z manual done']);
    const [automation] = await exported('exporter');
    expect(automation).toMatchObject({ id, prompt: 'Daily digest' });
    // The pruned 08:00 run is in neither the list nor the export.
    expect(
      automation.runs.map(
        (run: Json) => `${new Date(run.occurrence).toISOString()} ${run.manual} ${run.status}`,
      ),
    ).toEqual(['2030-06-06T08:30:00.000Z true done']);

    expect((await api('DELETE', '/admin/users/exporter')).status).toBe(200);
    expect(await exported('exporter')).toEqual([]);
    expect((await api('GET', `/users/exporter/automations/${id}/runs`)).status).toBe(404);
  });
});
