import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { automationTickAt, call } from '../support/automation-ticks.ts';
import { reply } from '../support/fake-llm-server.ts';
import { type ReminderStack, startReminderStack } from '../support/reminder-stack.ts';
import type { RunningParley } from '../support/start-parley.ts';
import { waitFor } from '../support/wait-for.ts';

/** Starting Parley took over 60 s while this machine was shared; a wait, not a speed check. */
const START_TIMEOUT_MS = 240_000;

/** Only the server engine can be shared: the embedded one belongs to one process. */
describe('automations on three Parley processes sharing one PostgreSQL database', () => {
  let stack: ReminderStack;
  let replicas: RunningParley[];
  const USERS = Array.from({ length: 8 }, (_, i) => `auto-replica-${i}`);
  const chatOf = (i: number) => String(7000 + i);
  const runsDone = (processes: RunningParley[]) =>
    processes.reduce((n, p) => n + p.logs.filter((l) => l.msg === 'automation run done').length, 0);

  vi.setConfig({ testTimeout: 240_000 });
  beforeAll(async () => {
    stack = await startReminderStack('server', { start: '2030-04-01T06:00:00Z' });
    replicas = [stack.parley, await stack.startAnother(), await stack.startAnother()];
  }, START_TIMEOUT_MS);
  afterAll(async () => {
    await stack?.stop();
  });

  it('run each occurrence once, also after one of them was killed between two occurrences', async () => {
    stack.llm.respond(reply.text('Your morning report.'));
    const ids: string[] = [];
    for (const [i, userId] of USERS.entries()) {
      expect((await stack.putProfile(userId, { telegram_chat_id: chatOf(i) })).status).toBe(200);
      // Each user's requests go to another process: any of them may create, any may run.
      const made = await call(
        replicas[i % 3] as RunningParley,
        'POST',
        `/users/${userId}/automations`,
        {
          prompt: 'Morning report',
          schedule: { type: 'daily', time: '08:00' },
        },
      );
      expect(made.status).toBe(201);
      ids.push(made.body.id);
    }

    // All three tick at the same instants, several times over the first occurrence.
    for (const time of ['07:59:59', '08:00:00', '08:00:01', '08:05:00']) {
      await automationTickAt(stack, `2030-04-01T${time}Z`, replicas);
    }
    for (const i of USERS.keys()) {
      expect(stack.telegram.visibleIn(chatOf(i))).toEqual([
        '🔁 Morning report\n\nYour morning report.',
      ]);
    }
    expect(runsDone(replicas)).toBe(USERS.length);

    // One replica dies between the two occurrences; the other two carry on.
    const killed = replicas[1] as RunningParley;
    await killed.stop('SIGKILL');
    const alive = [replicas[0], replicas[2]] as RunningParley[];
    for (const time of ['2030-04-02T07:59:00Z', '2030-04-02T08:00:00Z', '2030-04-02T08:00:02Z']) {
      await automationTickAt(stack, time, alive);
    }
    for (const [i, userId] of USERS.entries()) {
      expect(stack.telegram.visibleIn(chatOf(i))).toHaveLength(2);
      const runs = (await call(stack.parley, 'GET', `/users/${userId}/automations/${ids[i]}/runs`))
        .body.runs as { occurrence: string; status: string }[];
      expect(runs.map((r) => [r.occurrence, r.status])).toEqual([
        ['2030-04-02T08:00:00.000Z', 'done'],
        ['2030-04-01T08:00:00.000Z', 'done'],
      ]);
    }
    expect(runsDone(replicas)).toBe(2 * USERS.length);
    expect(stack.llm.chats).toHaveLength(2 * USERS.length);
    stack.telegram.assertNoUnexpected();
    stack.llm.assertNoUnexpected();
  });

  it('hand a run whose process was killed under it to another once its claim has run out', async () => {
    const alive = [replicas[0], replicas[2]] as RunningParley[];
    const userId = USERS[0] as string;
    const listed = await call(alive[0] as RunningParley, 'GET', `/users/${userId}/automations`);
    const id = listed.body.automations[0].id as string;
    // Only this user's next run: the others are paused.
    for (const other of USERS.slice(1)) {
      const theirs = await call(alive[0] as RunningParley, 'GET', `/users/${other}/automations`);
      await call(
        alive[0] as RunningParley,
        'POST',
        `/users/${other}/automations/${theirs.body.automations[0].id}/pause`,
      );
    }
    const chats = stack.llm.chats.length;
    const marks = alive.map((p) => p.logs.length);
    stack.llm.enqueue(reply.stall(), reply.text('Taken over.'));
    stack.setClock('2030-04-03T08:00:00Z');
    // The run hangs in the model, on one of the two: that one is killed under it.
    const claimedBy = (p: RunningParley, i: number) =>
      p.logs
        .slice(marks[i])
        .some((l) => l.msg === 'automation run claimed' && l.automationId === id);
    await waitFor(() => stack.llm.chats.length > chats && alive.some(claimedBy), 60_000);
    const holder = alive.find(claimedBy);
    expect(alive.filter(claimedBy)).toHaveLength(1);
    await (holder as RunningParley).stop('SIGKILL');
    const survivor = alive.find((p) => p !== holder) as RunningParley;
    // Within the claim (twice a chat's time limit and a minute: 22 minutes at the default
    // ANSWER_MAX_SECONDS) nobody takes it; after it, the survivor does.
    await automationTickAt(stack, '2030-04-03T08:20:00Z', [survivor]);
    expect(stack.telegram.visibleIn(chatOf(0))).toHaveLength(2);
    await automationTickAt(stack, '2030-04-03T08:23:00Z', [survivor]);
    expect(stack.telegram.visibleIn(chatOf(0)).slice(2)).toEqual([
      '🔁 Morning report\n\nTaken over.',
    ]);
    await automationTickAt(stack, '2030-04-03T08:23:30Z', [survivor]);
    expect(stack.telegram.visibleIn(chatOf(0))).toHaveLength(3);
    const runs = (await call(survivor, 'GET', `/users/${userId}/automations/${id}/runs`)).body
      .runs as { occurrence: string; status: string }[];
    expect(runs[0]).toMatchObject({ occurrence: '2030-04-03T08:00:00.000Z', status: 'done' });
  });
});
