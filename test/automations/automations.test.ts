import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { automationTickAt, call } from '../support/automation-ticks.ts';
import { ENGINES } from '../support/engines.ts';
import { reply } from '../support/fake-llm-server.ts';
import { type ReminderStack, startReminderStack } from '../support/reminder-stack.ts';
import { waitFor } from '../support/wait-for.ts';

/** Starting Parley took over 60 s while this machine was shared; a wait, not a speed check. */
const START_TIMEOUT_MS = 180_000;

/**
 * Automations seen from outside: the clock moves only when a test moves it (across the March
 * change in New York, and across downtime), the model is the fake one and results arrive at
 * the fake Bot API. Each scenario has its own user.
 */
describe.each(ENGINES)('automations on the %s engine', (engine) => {
  let stack: ReminderStack;
  const api = (method: string, path: string, body?: unknown, token?: string) =>
    call(stack.parley, method, path, body, token);
  const tick = (iso: string) => automationTickAt(stack, iso);
  const visible = (chatId: string) => stack.telegram.visibleIn(chatId);
  const runsOf = async (userId: string, id: string) =>
    (await api('GET', `/users/${userId}/automations/${id}/runs`)).body.runs as Array<{
      status: string;
      occurrence: string;
      error: string | null;
      delivered_to: string | null;
      manual: boolean;
    }>;
  const create = async (userId: string, body: Record<string, unknown>) => {
    const created = await api('POST', `/users/${userId}/automations`, body);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body as { id: string; [key: string]: unknown };
  };
  const profile = async (userId: string, body: Record<string, unknown>) => {
    expect((await stack.putProfile(userId, body)).status).toBe(200);
  };

  vi.setConfig({ testTimeout: 180_000 });
  beforeAll(async () => {
    stack = await startReminderStack(engine, {
      start: '2030-03-08T14:00:00Z',
      env: {
        AUTOMATIONS_PER_USER: '3',
        AUTOMATION_MIN_INTERVAL_MINUTES: '120',
        // A restart under a run that hangs in the model cuts it at the end of the grace period
        // either way; the test need not wait out the default 10 s for it.
        SHUTDOWN_GRACE_MS: '1000',
      },
    });
  }, START_TIMEOUT_MS);
  afterEach(() => {
    stack.telegram.assertNoUnexpected();
    stack.llm.assertNoUnexpected();
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('runs at 08:00 in New York across the March change, in its own conversation, once each', async () => {
    await profile('ny', { timezone: 'America/New_York', telegram_chat_id: '5001' });
    const made = await create('ny', {
      prompt: 'What is on today?',
      schedule: { type: 'daily', time: '08:00' },
    });
    expect(made).toMatchObject({
      name: 'What is on today?',
      schedule_in_words: 'every day at 08:00 (America/New_York)',
      timezone: 'America/New_York',
      status: 'active',
      next_run_at: '2030-03-09T13:00:00.000Z', // 08:00 EST
      conversation_id: null,
      unread: 0,
    });

    stack.llm.enqueue(reply.text('**Saturday**: nothing due.'));
    await tick('2030-03-09T12:59:00Z');
    expect(visible('5001')).toEqual([]);
    await tick('2030-03-09T13:00:00Z');
    expect(visible('5001')).toEqual(['🔁 What is on today?\n\nSaturday: nothing due.']);
    const [first] = stack.telegram.sentTo('5001');
    expect(first?.parseMode).toBe('HTML');
    expect(first?.text).toContain('<b>Saturday</b>');
    await tick('2030-03-09T13:00:30Z');
    await tick('2030-03-09T18:00:00Z');
    expect(visible('5001')).toHaveLength(1);

    // Clocks go forward on Sunday 10 March: 08:00 EDT is 12:00 UTC.
    stack.llm.enqueue(reply.text('Sunday: still nothing.'));
    await tick('2030-03-10T11:59:00Z');
    expect(visible('5001')).toHaveLength(1);
    await tick('2030-03-10T12:00:00Z');
    expect(visible('5001')).toEqual([
      '🔁 What is on today?\n\nSaturday: nothing due.',
      '🔁 What is on today?\n\nSunday: still nothing.',
    ]);
    // The second run saw the first: the conversation keeps its history from run to run.
    const messages = stack.llm.chats.at(-1)?.body.messages ?? [];
    expect(messages.filter((m) => m.role === 'user').map((m) => m.content)).toEqual([
      'What is on today?',
      'What is on today?',
    ]);
    expect(
      messages.some((m) => m.role === 'assistant' && m.content === '**Saturday**: nothing due.'),
    ).toBe(true);

    const runs = await runsOf('ny', made.id);
    expect(runs.map((r) => [r.occurrence, r.status, r.delivered_to])).toEqual([
      ['2030-03-10T12:00:00.000Z', 'done', 'telegram,web'],
      ['2030-03-09T13:00:00.000Z', 'done', 'telegram,web'],
    ]);
    const listed = (await api('GET', '/users/ny/automations')).body;
    expect(listed.unread).toBe(2);
    const conversationId = listed.automations[0].conversation_id as string;
    const conversation = await api('GET', `/users/ny/conversations/${conversationId}`);
    expect(conversation.status).toBe(200);
    // The automation's own conversation, with both runs; not the user's current one, so the
    // web client's chat goes on where it was.
    expect(conversation.body.conversation).toMatchObject({
      title: 'What is on today?',
      current: false,
    });
    expect(conversation.body.turns.map((t: { answer: string }) => t.answer)).toEqual([
      'Sunday: still nothing.',
      '**Saturday**: nothing due.',
    ]);
    expect((await api('POST', `/users/ny/automations/${made.id}/read`)).body).toEqual({
      unread: 0,
    });
    expect((await api('GET', '/users/ny/automations')).body.unread).toBe(0);
    // Paused, it stays out of the scenarios that follow.
    const paused = await api('POST', `/users/ny/automations/${made.id}/pause`);
    expect(paused.body).toMatchObject({ status: 'paused', paused_reason: null });
  });

  it('runs what was missed while Parley was down once, and skips what is over a day late', async () => {
    await profile('down', { timezone: 'America/New_York', telegram_chat_id: '5101' });
    const daily = await create('down', {
      prompt: 'Morning summary',
      schedule: { type: 'daily', time: '08:00' },
    });
    const once = await create('down', {
      name: 'Call the bank',
      prompt: 'Remind me to call the bank',
      schedule: { type: 'once', date: '2030-03-14', time: '09:00' },
    });
    // Down from 10 March 13:00 UTC until 13 March 12:30 UTC (08:30 EDT): the occurrences of
    // the 11th, 12th and 13th collapse into the 13th's.
    stack.llm.enqueue(reply.text('Summary after the outage.'));
    stack.setClock('2030-03-13T12:30:00Z');
    await stack.restart();
    await tick('2030-03-13T12:30:01Z');
    expect(visible('5101')).toEqual(['🔁 Morning summary\n\nSummary after the outage.']);
    expect((await runsOf('down', daily.id)).map((r) => r.occurrence)).toEqual([
      '2030-03-13T12:00:00.000Z',
    ]);

    // Paused, the daily one does not run; the one-time one, more than a day late, is skipped.
    const paused = await api('POST', `/users/down/automations/${daily.id}/pause`);
    expect(paused.body.status).toBe('paused');
    await tick('2030-03-15T14:00:00Z');
    expect(visible('5101')).toHaveLength(1);
    expect(await runsOf('down', once.id)).toMatchObject([
      { occurrence: '2030-03-14T13:00:00.000Z', status: 'skipped', error: 'more than a day late' },
    ]);
    const onceNow = (await api('GET', '/users/down/automations')).body.automations.find(
      (a: { id: string }) => a.id === once.id,
    );
    expect(onceNow).toMatchObject({ status: 'finished', next_run_at: null });

    // Resumed: from the next occurrence on, nothing of what passed while paused.
    const resumed = await api('POST', `/users/down/automations/${daily.id}/resume`);
    expect(resumed.body).toMatchObject({
      status: 'active',
      next_run_at: '2030-03-16T12:00:00.000Z',
    });
    await tick('2030-03-15T14:00:30Z');
    expect(visible('5101')).toHaveLength(1);
    expect(stack.llm.pendingReplies).toBe(0);
    // Deleted with its runs (it stays out of the scenarios that follow).
    expect((await api('DELETE', `/users/down/automations/${daily.id}`)).body).toEqual({
      deleted: daily.id,
    });
    expect((await api('GET', `/users/down/automations/${daily.id}/runs`)).status).toBe(404);
  });

  it('pauses an automation after three failed runs in a row and tells the user why', async () => {
    await profile('fails', { telegram_chat_id: '5201' });
    stack.setClock('2030-03-20T00:00:00Z');
    const every = await create('fails', {
      prompt: 'Check the feed',
      schedule: { type: 'every', hours: 2 },
    });
    expect(every).toMatchObject({
      schedule_in_words: 'every 2 hours, starting 2030-03-20T02:00:00.000Z',
      next_run_at: '2030-03-20T02:00:00.000Z',
    });
    stack.llm.enqueue(reply.error(500), reply.error(500), reply.error(500));
    await tick('2030-03-20T02:00:00Z');
    await tick('2030-03-20T04:00:00Z');
    expect((await api('GET', '/users/fails/automations')).body.automations[0].status).toBe(
      'active',
    );
    await tick('2030-03-20T06:00:00Z');
    const listed = (await api('GET', '/users/fails/automations')).body.automations[0];
    expect(listed.status).toBe('paused');
    expect(listed.paused_reason).toMatch(/^Paused after 3 failed runs in a row\. The last: model_/);
    const runs = await runsOf('fails', every.id);
    expect(runs.map((r) => r.status)).toEqual(['failed', 'failed', 'failed']);
    expect(visible('5201')).toEqual([`⏸️ Check the feed\n\n${listed.paused_reason}`]);
    // Paused: the next occurrences do not run (the model is not asked again).
    await tick('2030-03-20T08:00:00Z');
    expect(await runsOf('fails', every.id)).toHaveLength(3);
  });

  it('runs now on request; a run refused by the user’s limit is recorded once, not retried', async () => {
    const admin = await api('POST', '/admin/users', { user_id: 'limited' });
    expect(admin.status).toBe(201);
    const key = admin.body.key as string;
    expect(
      (await api('PATCH', '/admin/users/limited', { limits: { chats_per_minute: 1 } })).status,
    ).toBe(200);
    const made = (
      await api(
        'POST',
        '/users/limited/automations',
        {
          prompt: 'Anything new?',
          schedule: { type: 'weekly', days: ['mon', 'thu'], time: '07:30' },
        },
        key,
      )
    ).body as { id: string; schedule_in_words: string };
    expect(made.schedule_in_words).toBe('every Monday and Thursday at 07:30 (UTC)');
    // Days picked Sunday first, then Wednesday, then Monday read in the week's order.
    const picked = (
      await api(
        'POST',
        '/users/limited/automations',
        {
          prompt: 'Plants?',
          schedule: { type: 'weekly', days: ['sun', 'wed', 'mon'], time: '18:00' },
        },
        key,
      )
    ).body as { id: string; schedule_in_words: string };
    expect(picked.schedule_in_words).toBe('every Monday, Wednesday and Sunday at 18:00 (UTC)');
    expect(
      (await api('DELETE', `/users/limited/automations/${picked.id}`, undefined, key)).status,
    ).toBe(200);

    stack.llm.enqueue(reply.text('Nothing new.'));
    expect(
      (await api('POST', `/users/limited/automations/${made.id}/run`, undefined, key)).status,
    ).toBe(202);
    await waitFor(async () => (await runsOf('limited', made.id))[0]?.status === 'done');
    // A second one within the minute: over the chat rate, like a chat would be.
    expect(
      (await api('POST', `/users/limited/automations/${made.id}/run`, undefined, key)).status,
    ).toBe(202);
    await waitFor(async () => (await runsOf('limited', made.id))[0]?.status === 'refused');
    const runs = await runsOf('limited', made.id);
    expect(runs.map((r) => [r.manual, r.status, r.delivered_to])).toEqual([
      [true, 'refused', null],
      [true, 'done', 'web'],
    ]);
    expect(runs[0]?.error).toContain('1 a minute');
    await tick('2030-03-20T08:00:30Z');
    expect(await runsOf('limited', made.id)).toHaveLength(2);
    expect(stack.llm.pendingReplies).toBe(0);
    // The user's export holds them, with their runs.
    const exported = await api('GET', '/users/limited/export');
    expect(exported.body.automations).toMatchObject([
      {
        id: made.id,
        prompt: 'Anything new?',
        schedule: { type: 'weekly', days: ['mon', 'thu'], time: '07:30' },
        runs: [
          { manual: true, status: 'done' },
          { manual: true, status: 'refused' },
        ],
      },
    ]);
    // A user who is deleted takes their automations along: none runs as them any more.
    expect((await api('DELETE', '/admin/users/limited')).status).toBe(200);
    expect((await api('GET', '/users/limited/automations')).body.automations).toEqual([]);
  });

  it('is created by asking the assistant, which says the schedule back in words', async () => {
    stack.llm.enqueue(
      reply.toolCalls([
        {
          name: 'create_automation',
          args: {
            prompt: 'Summarise the news about solar power',
            schedule: { type: 'weekdays', time: '08:00' },
          },
        },
      ]),
      (request) => {
        const result = request.messages.findLast((m) => m.role === 'tool');
        const said = JSON.parse(String(result?.content)) as { schedule_in_words: string };
        return reply.text(`Done: ${said.schedule_in_words}.`);
      },
    );
    const chat = await stack.parley.fetch('/chat', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        user_id: 'asker',
        message: 'Every weekday at 8, summarise the solar news',
      }),
    });
    expect(await chat.text()).toContain('Done: every weekday (Monday to Friday) at 08:00 (UTC).');
    const listed = (await api('GET', '/users/asker/automations')).body.automations;
    expect(listed).toMatchObject([
      {
        prompt: 'Summarise the news about solar power',
        schedule: { type: 'weekdays', time: '08:00' },
      },
    ]);
    // Paused, it stays out of the scenarios that follow.
    expect((await api('POST', `/users/asker/automations/${listed[0].id}/pause`)).status).toBe(200);
  });

  it('asks the model for a flat schedule, and hands a wrong one back with the reason to fix it', async () => {
    let results: string[] = [];
    stack.llm.enqueue(
      // A once without its date, then a daily one with a date it cannot have.
      reply.toolCalls([
        {
          name: 'create_automation',
          args: { prompt: 'Pay the rent', schedule: { type: 'once', time: '08:00' } },
        },
      ]),
      reply.toolCalls([
        {
          name: 'create_automation',
          args: {
            prompt: 'Pay the rent',
            schedule: { type: 'daily', time: '08:00', date: '2030-04-01' },
          },
        },
      ]),
      reply.toolCalls([
        {
          name: 'create_automation',
          args: {
            prompt: 'Pay the rent',
            schedule: { type: 'once', date: '2030-04-01', time: '08:00' },
          },
        },
      ]),
      (request) => {
        results = request.messages.filter((m) => m.role === 'tool').map((m) => String(m.content));
        return reply.text('Stored for 1 April.');
      },
    );
    const chat = await stack.parley.fetch('/chat', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ user_id: 'flat', message: 'Remind me to pay the rent on 1 April' }),
    });
    expect(await chat.text()).toContain('Stored for 1 April.');
    expect(results).toHaveLength(3);
    expect(results[0]).toContain('Invalid input: expected string, received undefined');
    expect(results[0]).toMatch(/"path": \[\s*"schedule",\s*"date"\s*\]/);
    expect(results[1]).toMatch(/Unrecognized key: [^\n]*date/);
    expect(results[2]).toContain('once, on 2030-04-01 at 08:00 (UTC)');

    // What the model was offered: one object, no union of six, the choices named.
    const offered = stack.llm.chats
      .at(-1)
      ?.body.tools?.find((t) => t.function.name === 'create_automation')?.function.parameters as {
      properties: { schedule: Record<string, unknown> & { properties: Record<string, unknown> } };
    };
    const schedule = offered.properties.schedule;
    expect(JSON.stringify(schedule)).not.toMatch(/oneOf|anyOf/);
    expect(Object.keys(schedule.properties).sort()).toEqual(
      ['date', 'day', 'days', 'hours', 'starts_at', 'time', 'type'].sort(),
    );
    const listed = (await api('GET', '/users/flat/automations')).body.automations;
    expect(listed).toMatchObject([
      { schedule: { type: 'once', date: '2030-04-01', time: '08:00' } },
    ]);
    expect((await api('DELETE', `/users/flat/automations/${listed[0].id}`)).status).toBe(200);
  });

  it('sends a long result in parts, and a run cut short by a restart once, after it', async () => {
    await profile('long', { telegram_chat_id: '5301' });
    stack.setClock('2030-03-21T00:00:00Z');
    const made = await create('long', {
      prompt: 'Long report',
      schedule: { type: 'daily', time: '06:00' },
    });
    // Over Telegram's 4,096 characters: two messages, each whole paragraphs.
    const paragraph = (n: number) => `Paragraph ${n}: ${'word '.repeat(180).trim()}.`;
    const long = Array.from({ length: 8 }, (_, i) => paragraph(i + 1)).join('\n\n');
    stack.llm.enqueue(reply.text(long));
    await tick('2030-03-21T06:00:00Z');
    const parts = visible('5301');
    expect(parts).toHaveLength(2);
    expect(parts.every((part) => part.length <= 4096)).toBe(true);
    expect(parts.join('\n\n')).toBe(`🔁 Long report\n\n${long}`);

    // The next run hangs in the model; Parley is stopped under it. The run is not recorded as
    // done, so the restarted process runs the occurrence again, and delivers it once.
    stack.llm.enqueue(reply.stall(), reply.text('After the restart.'));
    stack.setClock('2030-03-22T06:00:00Z');
    await waitFor(
      () => stack.llm.chats.length > 0 && stack.llm.chats.at(-1)?.outcome === 'pending',
      30_000,
    );
    stack.setClock('2030-03-22T06:00:05Z');
    await stack.restart();
    // The first tick of the new process ran the occurrence (its claim was let go at the stop).
    await tick('2030-03-22T06:00:06Z');
    expect(visible('5301').slice(2)).toEqual(['🔁 Long report\n\nAfter the restart.']);
    expect((await runsOf('long', made.id)).map((r) => [r.occurrence, r.status])).toEqual([
      ['2030-03-22T06:00:00.000Z', 'done'],
      ['2030-03-21T06:00:00.000Z', 'done'],
    ]);
    await tick('2030-03-22T06:00:30Z');
    expect(visible('5301')).toHaveLength(3);
    expect((await api('POST', `/users/long/automations/${made.id}/pause`)).status).toBe(200);
  });

  it('runs a skipped time at the jump and a doubled time at its first, east of UTC too', async () => {
    await profile('berlin', { timezone: 'Europe/Berlin' });
    // 2030-03-31: 02:00 CET jumps to 03:00 CEST (01:00 UTC); 02:30 does not exist.
    const spring = await create('berlin', {
      prompt: 'Spring',
      schedule: { type: 'once', date: '2030-03-31', time: '02:30' },
    });
    expect(spring.next_run_at).toBe('2030-03-31T01:00:00.000Z'); // 03:00 CEST, not 03:31
    // 2030-10-27: 03:00 CEST goes back to 02:00 CET; 02:30 is 00:30 UTC, then 01:30 UTC.
    const autumn = await create('berlin', {
      prompt: 'Autumn',
      schedule: { type: 'once', date: '2030-10-27', time: '02:30' },
    });
    expect(autumn.next_run_at).toBe('2030-10-27T00:30:00.000Z');
    // London goes back from 02:00 BST to 01:00 GMT: 01:15 is 00:15 UTC, then 01:15 UTC.
    const london = await api('PATCH', `/users/berlin/automations/${autumn.id}`, {
      schedule: { type: 'once', date: '2030-10-27', time: '01:15' },
      timezone: 'europe/london',
    });
    expect(london.body.next_run_at).toBe('2030-10-27T00:15:00.000Z'); // 01:15 BST, the first
    expect(london.body.timezone).toBe('Europe/London'); // as usually spelt, however typed
  });

  it('names an automation after its prompt without cutting a character in half', async () => {
    const prompt = `${'a'.repeat(58)}🌞🌞 and the rest of a long prompt`;
    const made = await create('emoji', { prompt, schedule: { type: 'daily', time: '09:00' } });
    expect(made.name).toBe(`${'a'.repeat(58)}🌞…`);
    expect(made.prompt).toBe(prompt);
  });

  it('names an automation after its prompt in one line that the API takes back', async () => {
    // Control characters that are not whitespace (a terminal's escape, a pasted NEL) are
    // allowed in a prompt, but not in a name: one taken from the prompt must leave them out.
    const prompt = 'Check\u0085the news\u001b[1m today\u0007';
    const made = await create('controls', { prompt, schedule: { type: 'daily', time: '09:00' } });
    expect(made.prompt).toBe(prompt);
    expect(made.name).toBe('Check the news [1m today');
    const sentBack = await api('PATCH', `/users/controls/automations/${made.id}`, {
      name: made.name,
    });
    expect(sentBack.status, JSON.stringify(sentBack.body)).toBe(200);
  });

  it('refuses "run now" with a 409 while a run of it is queued or running', async () => {
    const made = await create('twice', {
      prompt: 'Sum up the week',
      schedule: { type: 'daily', time: '09:00' },
    });
    const run = `/users/twice/automations/${made.id}/run`;
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    stack.llm.enqueue(reply.text('Summed up.', { pace: () => held }));
    expect((await api('POST', run)).status).toBe(202);
    expect(await api('POST', run)).toMatchObject({
      status: 409,
      body: { detail: expect.stringContaining('already queued or running') },
    });
    release();
    await waitFor(async () => (await runsOf('twice', made.id))[0]?.status === 'done');
    expect(await runsOf('twice', made.id)).toHaveLength(1);
    stack.llm.enqueue(reply.text('Again.'));
    expect((await api('POST', run)).status).toBe(202); // once it is over, it may run again
    await waitFor(async () => (await runsOf('twice', made.id))[0]?.status === 'done');
  });

  it('titles its conversation within a title’s limits; a name is one line', async () => {
    const lines = await api('POST', '/users/titled/automations', {
      name: 'Morning\nbrief',
      prompt: 'x',
      schedule: { type: 'daily', time: '09:00' },
    });
    expect(lines.status).toBe(422);
    expect(lines.body.detail[0]).toMatchObject({ loc: ['body', 'name'] });
    const name = `Weekly review of ${'everything that happened '.repeat(3)}and more`;
    const made = await create('titled', {
      name,
      prompt: 'Review',
      schedule: { type: 'daily', time: '09:00' },
    });
    expect(made.name).toBe(name); // 90 characters: a name may be longer than a title
    stack.llm.enqueue(reply.text('Reviewed.'));
    expect((await api('POST', `/users/titled/automations/${made.id}/run`)).status).toBe(202);
    await waitFor(async () => (await runsOf('titled', made.id))[0]?.status === 'done');
    const conversationId = (await api('GET', '/users/titled/automations')).body.automations[0]
      .conversation_id as string;
    const title = (await api('GET', `/users/titled/conversations/${conversationId}`)).body
      .conversation.title as string;
    expect(title).toBe('Weekly review of everything that happened everything that…');
    expect([...title].length).toBeLessThanOrEqual(60);
  });

  it('refuses what it cannot do with a clear 4xx', async () => {
    const bad = [
      { prompt: 'x', schedule: { type: 'daily', time: '25:00' } },
      { prompt: 'x', schedule: { type: 'weekly', days: [], time: '08:00' } },
      { prompt: 'x', schedule: { type: 'monthly', day: 32, time: '08:00' } },
      { prompt: 'x', schedule: { type: 'once', date: '2030-02-30', time: '08:00' } },
      { prompt: '', schedule: { type: 'daily', time: '08:00' } },
      { prompt: 'x', schedule: { type: 'hourly' } },
      { prompt: 'x', schedule: { type: 'daily', time: '08:00' }, timezone: 'Mars/Olympus' },
    ];
    for (const body of bad) {
      expect(
        (await api('POST', '/users/rules/automations', body)).status,
        JSON.stringify(body),
      ).toBe(422);
    }
    const tooOften = await api('POST', '/users/rules/automations', {
      prompt: 'x',
      schedule: { type: 'every', hours: 1 },
    });
    expect(tooOften).toMatchObject({
      status: 422,
      body: { detail: expect.stringContaining('120 minutes') },
    });
    const past = await api('POST', '/users/rules/automations', {
      prompt: 'x',
      schedule: { type: 'once', date: '2020-01-01', time: '08:00' },
    });
    expect(past).toMatchObject({
      status: 422,
      body: { detail: expect.stringContaining('has passed') },
    });
    for (let i = 0; i < 3; i++)
      await create('rules', { prompt: `p${i}`, schedule: { type: 'daily', time: '08:00' } });
    const fourth = await api('POST', '/users/rules/automations', {
      prompt: 'p',
      schedule: { type: 'daily', time: '08:00' },
    });
    expect(fourth).toMatchObject({
      status: 422,
      body: { detail: expect.stringContaining('at the limit (3)') },
    });

    // A change: the schedule and timezone count from now; a bad one is refused, nothing changed.
    const [first] = (await api('GET', '/users/rules/automations')).body.automations as {
      id: string;
    }[];
    const changed = await api('PATCH', `/users/rules/automations/${first?.id}`, {
      name: 'Renamed',
      schedule: { type: 'monthly', day: 31, time: '09:00' },
      timezone: 'Asia/Seoul',
    });
    expect(changed).toMatchObject({
      status: 200,
      body: {
        name: 'Renamed',
        schedule_in_words:
          'on day 31 of every month at 09:00 (Asia/Seoul), or the last day of a shorter month',
        next_run_at: '2030-03-31T00:00:00.000Z',
      },
    });
    const refused = await api('PATCH', `/users/rules/automations/${first?.id}`, {
      schedule: { type: 'every', hours: 1 },
    });
    expect(refused.status).toBe(422);
    expect(
      (await api('PATCH', `/users/rules/automations/${first?.id}`, { colour: 'red' })).status,
    ).toBe(422);
    const after = (await api('GET', '/users/rules/automations')).body.automations[0];
    expect(after).toMatchObject({
      name: 'Renamed',
      timezone: 'Asia/Seoul',
      schedule: { type: 'monthly' },
    });

    const unknown = '00000000-0000-4000-8000-000000000000';
    for (const [method, path] of [
      ['PATCH', `/users/rules/automations/${unknown}`],
      ['POST', `/users/rules/automations/${unknown}/pause`],
      ['POST', `/users/rules/automations/${unknown}/run`],
      ['GET', `/users/rules/automations/${unknown}/runs`],
      ['DELETE', `/users/rules/automations/${unknown}`],
    ] as const) {
      expect((await api(method, path, method === 'PATCH' ? { name: 'n' } : undefined)).status).toBe(
        404,
      );
    }
    // Another user's automation is not found either.
    const theirs = (await api('GET', '/users/ny/automations')).body.automations[0].id as string;
    expect((await api('DELETE', `/users/rules/automations/${theirs}`)).status).toBe(404);
    expect((await api('GET', '/users/ny/automations')).body.automations).toHaveLength(1);
  });
  it('refuses a new timezone that puts a one-time automation in the past', async () => {
    // Where the long report's test left the clock (set again for this test alone).
    stack.setClock('2030-03-22T06:00:30Z');
    const once = await create('moved', {
      prompt: 'Take the cake out',
      schedule: { type: 'once', date: '2030-03-22', time: '12:00' },
      timezone: 'UTC',
    });
    expect(once.next_run_at).toBe('2030-03-22T12:00:00.000Z');
    // 12:00 in Tokyo was 03:00 UTC: already past. Kept as it was, not "active" with no run.
    const moved = await api('PATCH', `/users/moved/automations/${once.id}`, {
      timezone: 'Asia/Tokyo',
    });
    expect(moved).toMatchObject({
      status: 422,
      body: { detail: expect.stringContaining('has passed') },
    });
    const after = (await api('GET', '/users/moved/automations')).body.automations[0];
    expect(after).toMatchObject({
      timezone: 'UTC',
      status: 'active',
      next_run_at: '2030-03-22T12:00:00.000Z',
    });
    // Ahead in the new timezone, it moves with it.
    const west = await api('PATCH', `/users/moved/automations/${once.id}`, {
      timezone: 'America/New_York',
    });
    expect(west.body).toMatchObject({ status: 'active', next_run_at: '2030-03-22T16:00:00.000Z' });
    expect((await api('DELETE', `/users/moved/automations/${once.id}`)).status).toBe(200);
  });

  it('keeps to the per-user limit when many automations are created at once', async () => {
    // On PostgreSQL each request has a connection of its own: counting and inserting in one
    // statement let concurrent ones each see room for one more (9 of 3 were stored).
    for (let round = 0; round < 3; round++) {
      const userId = `crowd${round}`;
      const answers = await Promise.all(
        Array.from({ length: 30 }, (_, i) =>
          api('POST', `/users/${userId}/automations`, {
            prompt: `p${i}`,
            schedule: { type: 'daily', time: '08:00' },
          }),
        ),
      );
      expect(answers.filter((a) => a.status === 201)).toHaveLength(3);
      const refused = answers.filter((a) => a.status === 422);
      expect(refused).toHaveLength(27);
      expect(refused[0]?.body).toMatchObject({
        detail: 'Your automations are at the limit (3): delete one first.',
      });
      const listed = (await api('GET', `/users/${userId}/automations`)).body.automations;
      expect(listed).toHaveLength(3);
    }
  });
  it('sends nothing more once the automation is deleted during its run', async () => {
    await profile('regret', { telegram_chat_id: '5501' });
    const made = await create('regret', {
      prompt: 'Spam me',
      schedule: { type: 'daily', time: '09:00' },
    });
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const chats = stack.llm.chats.length;
    stack.llm.enqueue(reply.text('One more message.', { pace: () => held }));
    expect((await api('POST', `/users/regret/automations/${made.id}/run`)).status).toBe(202);
    await waitFor(() => stack.llm.chats.length > chats);
    expect((await api('DELETE', `/users/regret/automations/${made.id}`)).status).toBe(200);
    release();
    // The run ends (its answer stays in the conversation, which is kept) but is not sent.
    await waitFor(() =>
      stack.parley.logs.some(
        (l) => l.automationId === made.id && /^automation (run done|deleted)/.test(String(l.msg)),
      ),
    );
    expect(visible('5501')).toEqual([]);
  });

  it('takes a name from the assistant by the same rule as from the API: one line', async () => {
    stack.llm.enqueue(
      reply.toolCalls([
        {
          name: 'create_automation',
          args: {
            name: 'Morning\nbrief',
            prompt: 'Brief me',
            schedule: { type: 'daily', time: '09:00' },
          },
        },
      ]),
      (request) => {
        const result = String(request.messages.findLast((m) => m.role === 'tool')?.content);
        return reply.text(result.includes('control characters') ? 'Refused.' : 'Stored.');
      },
    );
    const chat = await stack.parley.fetch('/chat', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ user_id: 'oneline', message: 'Brief me at 9 every day' }),
    });
    expect(await chat.text()).toContain('Refused.');
    // The API would refuse to keep such a name (a PATCH of it back, as the web client does).
    expect((await api('GET', '/users/oneline/automations')).body.automations).toEqual([]);
  });

  it('shows a name on Telegram as it was written, Markdown characters and all', async () => {
    await profile('marks', { telegram_chat_id: '5601' });
    const name = '**Fish** & *chips* <today> snake_case_ `x ~~y [z]';
    const made = await create('marks', {
      name,
      prompt: 'What is for dinner?',
      schedule: { type: 'daily', time: '09:00' },
    });
    stack.llm.enqueue(reply.text('**Fish**, of course.'));
    expect((await api('POST', `/users/marks/automations/${made.id}/run`)).status).toBe(202);
    await waitFor(async () => (await runsOf('marks', made.id))[0]?.status === 'done');
    expect(visible('5601')).toEqual([`🔁 ${name}\n\nFish, of course.`]);
    const [sent] = stack.telegram.sentTo('5601');
    expect(sent?.text.startsWith('🔁 <b>')).toBe(true); // the name is the heading, in bold
    expect((await api('DELETE', `/users/marks/automations/${made.id}`)).status).toBe(200);
  });

  // A `---` showed as a line of 10 characters: a part of 4,000 with one between every item
  // showed over 4,096, Telegram refused it ("message is too long") and the result never came.
  it('delivers a result with a thematic break between every item whole, each part within 4,096', async () => {
    await profile('breaks', { telegram_chat_id: '5701' });
    const made = await create('breaks', {
      prompt: 'List forty things.',
      schedule: { type: 'daily', time: '09:00' },
    });
    const items = Array.from(
      { length: 40 },
      (_, i) => `Item ${i}: ${'lorem ipsum '.repeat(9)}end.`,
    );
    stack.llm.enqueue(reply.text(items.join('\n\n---\n\n')));
    expect((await api('POST', `/users/breaks/automations/${made.id}/run`)).status).toBe(202);
    await waitFor(async () => (await runsOf('breaks', made.id))[0]?.status === 'done');
    const parts = stack.telegram.sentTo('5701');
    expect(parts.length).toBeGreaterThanOrEqual(2);
    for (const part of parts) {
      expect(part.parseMode).toBe('HTML');
      expect(part.visible.length).toBeLessThanOrEqual(4096);
    }
    const shown = parts.map((m) => m.visible).join(' ');
    const norm = (text: string) => text.replace(/\s+/g, ' ');
    expect(norm(shown)).toBe(norm(`🔁 List forty things. ${items.join(' ─── ')}`));
    expect((await api('DELETE', `/users/breaks/automations/${made.id}`)).status).toBe(200);
  });
});
