import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { readChat } from '../support/chat-stream.ts';
import { type EngineSetup, engineSetup } from '../support/engine-setup.ts';
import { ENGINES } from '../support/engines.ts';
import { type FakeLlmServer, reply } from '../support/fake-llm-server.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';

/** Starting Parley took over 60 s while this machine was shared; a wait, not a speed check. */
const START_TIMEOUT_MS = 180_000;

const TOKEN = 'profile-test-token';

describe.each(ENGINES)('GET and PUT /users/{user_id}/profile on the %s engine', (engine) => {
  let setup: EngineSetup;
  let llm: FakeLlmServer;
  let parley: RunningParley;
  const get = async (userId: string) => {
    const response = await parley.fetch(`/users/${encodeURIComponent(userId)}/profile`);
    expect(response.status).toBe(200);
    return response.json();
  };
  const put = (userId: string, body: unknown) =>
    parley.fetch(`/users/${encodeURIComponent(userId)}/profile`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  beforeAll(async () => {
    setup = await engineSetup(engine);
    llm = setup.llm;
    parley = await startParley({
      dataDir: setup.dataDir,
      env: {
        ...setup.env,
        API_TOKEN: TOKEN,
        DEFAULT_TIMEZONE: 'Europe/Paris',
      },
    });
  }, START_TIMEOUT_MS);
  afterEach(() => llm.assertNoUnexpected());
  afterAll(async () => {
    await parley?.stop();
    await setup?.cleanup();
  });

  it('shows an unknown user the defaults, with DEFAULT_TIMEZONE', async () => {
    expect(await get('nobody')).toEqual({
      user_id: 'nobody',
      display_name: null,
      timezone: 'Europe/Paris',
      timezone_set: false,
      locale: null,
      telegram_chat_id: null,
      facts: {},
    });
  });

  it('stores what PUT sends, keeps what it leaves out, clears what it sets to null', async () => {
    const first = await put('erin', {
      display_name: 'Erin',
      timezone: 'Asia/Seoul',
      locale: 'ko-KR',
      telegram_chat_id: 12345,
    });
    expect(first.status).toBe(200);
    const expected = {
      user_id: 'erin',
      display_name: 'Erin',
      timezone: 'Asia/Seoul',
      timezone_set: true,
      locale: 'ko-KR',
      telegram_chat_id: '12345',
      facts: {},
    };
    expect(await first.json()).toEqual(expected);
    expect(await get('erin')).toEqual(expected);

    expect((await put('erin', { locale: null, timezone: null })).status).toBe(200);
    expect(await get('erin')).toEqual({
      ...expected,
      locale: null,
      timezone: 'Europe/Paris',
      timezone_set: false,
    });
    // Another user's profile is untouched.
    expect(await get('erin-2')).toMatchObject({ display_name: null, telegram_chat_id: null });
  });

  it('stores a timezone and a language in their usual spelling, however they were typed', async () => {
    expect((await put('ines', { timezone: 'asia/seoul', locale: 'KO-kr' })).status).toBe(200);
    expect(await get('ines')).toMatchObject({ timezone: 'Asia/Seoul', locale: 'ko-KR' });
    // A name typed in its own case is kept, not swapped for the runtime's older name for it.
    expect((await put('ines', { timezone: 'Asia/Kolkata' })).status).toBe(200);
    expect(await get('ines')).toMatchObject({ timezone: 'Asia/Kolkata' });
    // The model's update_profile goes through the same rule.
    llm.enqueue(
      reply.toolCalls([
        { name: 'update_profile', args: { timezone: 'europe/paris', locale: 'en-gb' } },
      ]),
      reply.text('Noted.'),
    );
    const chat = await parley.fetch('/chat', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'I live in Paris now', user_id: 'ines' }),
    });
    expect((await readChat(chat)).text).toBe('Noted.');
    expect(await get('ines')).toMatchObject({ timezone: 'Europe/Paris', locale: 'en-GB' });
  });

  it('is the profile the assistant keeps: update_profile shows in GET, PUT in the prompt', async () => {
    llm.enqueue(
      reply.toolCalls([
        { name: 'update_profile', args: { display_name: 'Frank', facts: { pet: 'cat' } } },
      ]),
      reply.text('Noted.'),
    );
    const chat = (message: string) =>
      parley.fetch('/chat', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ message, user_id: 'frank' }),
      });
    expect((await readChat(await chat('I am Frank, I have a cat'))).text).toBe('Noted.');
    expect(await get('frank')).toMatchObject({ display_name: 'Frank', facts: { pet: 'cat' } });

    expect((await put('frank', { timezone: 'America/Los_Angeles' })).status).toBe(200);
    llm.enqueue(reply.text('Hi Frank.'));
    await readChat(await chat('hello'));
    const system = String(llm.chats.at(-1)?.body.messages[0]?.content);
    expect(system).toContain('(America/Los_Angeles)');
    expect(system).toContain('- pet: cat');
  });

  it.each([
    ['an unknown timezone', { timezone: 'Mars/Olympus' }, ['body', 'timezone']],
    ['a locale that is not BCP 47', { locale: 'not a locale!' }, ['body', 'locale']],
    ['a chat id that is not one', { telegram_chat_id: 'abc' }, ['body', 'telegram_chat_id']],
    ['an empty display name', { display_name: '' }, ['body', 'display_name']],
    [
      'a display name over 100 characters',
      { display_name: 'x'.repeat(101) },
      ['body', 'display_name'],
    ],
    ['a field that does not exist', { facts: { a: 'b' } }, ['body']],
    ['an array instead of an object', [], ['body']],
  ])('answers 422 for %s, and changes nothing', async (_, body, loc) => {
    const response = await put('grace', body);
    expect(response.status).toBe(422);
    const detail = ((await response.json()) as { detail: { loc: unknown[] }[] }).detail;
    expect(detail[0]?.loc).toEqual(loc);
    expect(await get('grace')).toMatchObject({ display_name: null, timezone_set: false });
  });

  it('requires the token, and is in the OpenAPI document', async () => {
    const anonymous = await parley.fetch('/users/erin/profile', { token: null });
    expect(anonymous.status).toBe(401);
    expect(await anonymous.json()).toEqual({ detail: 'Unauthorized' });
    const unauthorizedPut = await parley.fetch('/users/erin/profile', {
      method: 'PUT',
      token: null,
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(unauthorizedPut.status).toBe(401);
    const openapi = (await (await parley.fetch('/openapi.json')).json()) as {
      paths: Record<string, Record<string, unknown>>;
    };
    expect(Object.keys(openapi.paths['/users/{user_id}/profile'] ?? {}).sort()).toEqual([
      'get',
      'put',
    ]);
    expect(openapi.paths['/reminders/{user_id}/{id}']).toHaveProperty('delete');
    expect(openapi.paths['/users/{user_id}/telegram-link']).toHaveProperty('post');
  });
});
