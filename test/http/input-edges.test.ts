import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EngineStack, startEngineStack } from '../support/chat-stack.ts';
import { readChat } from '../support/chat-stream.ts';
import { ENGINES } from '../support/engines.ts';
import { reply } from '../support/fake-llm-server.ts';
import { holdAt, lastEventId, readAll, textOf } from '../support/resumable.ts';

/** A list cursor as the server encodes one: `[pinned, updated_at in µs since 1970, id]`. */
const cursor = (updatedAt: unknown) =>
  Buffer.from(JSON.stringify([false, updatedAt, crypto.randomUUID()])).toString('base64url');

/**
 * Input a client may send that passed the routes' checks and then failed in the database (a
 * 500) or named nothing (an upper-case UUID), on one process of each engine.
 */
/** Beside small images, a message this long, escaped, outgrew the routes' body limits. */
const MESSAGE_MAX_CHARS = 200_000;

describe.each(ENGINES)('unusual input on the %s engine', (engine) => {
  let stack: EngineStack;

  beforeAll(async () => {
    stack = await startEngineStack(engine, {
      MESSAGE_MAX_CHARS: String(MESSAGE_MAX_CHARS),
      IMAGE_MAX_BYTES: '1024', // else the image's allowance hides the message's
    });
    stack.llm.respond(() => reply.text('An answer.'));
  });
  afterAll(() => stack?.stop());

  const send = async (method: string, path: string, body?: unknown) => {
    const response = await stack.parley.fetch(path, {
      method,
      ...(body === undefined
        ? {}
        : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
    });
    return { status: response.status, body: (await response.json()) as { detail: unknown } };
  };
  const expect422 = async (
    method: string,
    path: string,
    body: unknown,
    loc: readonly unknown[],
  ) => {
    const { status, body: error } = await send(method, path, body);
    expect(status, `${method} ${path} ${JSON.stringify(body)}`).toBe(422);
    expect(error.detail).toEqual([expect.objectContaining({ loc })]);
  };

  it('a cursor naming no real time, or a timezone that is an offset, is a 422', async () => {
    // Shaped like a cursor, but naming no time PostgreSQL can hold (the text of one was a
    // 500 when the cursor carried text; that form is refused now), or not a whole number.
    for (const time of [
      '2026-13-01 10:00:00+00',
      '2026-01-01 10:00:00+00',
      1e300,
      2 ** 53,
      1.5,
      -Infinity,
    ]) {
      const path = `/users/ann/conversations?cursor=${cursor(time)}`;
      await expect422('GET', path, undefined, ['query', 'cursor']);
    }
    expect(
      (
        await send(
          'GET',
          `/users/ann/conversations?cursor=${cursor(Date.UTC(2026, 0, 1, 4, 30, 0, 500) * 1000)}`,
        )
      ).status,
    ).toBe(200);
    // Intl takes "-0330", PostgreSQL does not (the user's usage was a 500 from then on), and
    // reads "+05:00" as POSIX, five hours west: a timezone is a name.
    for (const timezone of ['-0330', '+05:00']) {
      await expect422('PUT', '/users/ann/profile', { timezone }, ['body', 'timezone']);
      const automation = { prompt: 'p', schedule: { type: 'daily', time: '08:00' }, timezone };
      await expect422('POST', '/users/ann/automations', automation, ['body', 'timezone']);
    }
  });

  it('refuses the NUL character where it would be stored', async () => {
    const daily = { type: 'daily', time: '08:00' };
    await expect422('POST', '/users/ann/automations', { prompt: 'a\u0000b', schedule: daily }, [
      'body',
      'prompt',
    ]);
    await expect422(
      'POST',
      '/users/ann/automations',
      { name: 'n\u0000', prompt: 'p', schedule: daily },
      ['body', 'name'],
    );
    const stdio = { transport: 'stdio', name: 'nul', command: 'x' };
    for (const [change, loc] of [
      [{ command: 'x\u0000' }, ['body', 'command']],
      [{ args: ['\u0000'] }, ['body', 'args', 0]],
      [{ env: { A: '\u0000' } }, ['body', 'env', 'A']],
      [{ approval_tools: ['t\u0000'] }, ['body', 'approval_tools', 0]],
    ] as const) {
      await expect422('POST', '/admin/mcp-servers', { ...stdio, ...change }, loc);
    }
    await expect422(
      'POST',
      '/admin/mcp-servers',
      { transport: 'http', name: 'nul', url: 'http://a/\u0000' },
      ['body', 'url'],
    );
    const server = await send('POST', '/admin/mcp-servers', { ...stdio });
    const id = (server.body as unknown as { id: string }).id;
    await expect422('PATCH', `/admin/mcp-servers/${id}`, { approval_tools: ['\u0000'] }, [
      'body',
      'approval_tools',
      0,
    ]);
  });

  // Zero-width space, joiners, word joiner, BOM, Hangul filler: text that is there but shows
  // nothing. Accepted, it listed as an empty-looking title, name or reminder.
  const INVISIBLE = ['\u200b', '\u200c\u200d\u2060\ufeff', ' \u200b\u3164 '];

  it('refuses text with nothing visible where "not empty" is the rule', async () => {
    const conversation = (await send('POST', '/users/ann/conversations', {})).body as unknown as {
      id: string;
    };
    const daily = { type: 'daily', time: '08:00' };
    const stdio = { transport: 'stdio', name: 'blank', command: 'x' };
    for (const text of INVISIBLE) {
      for (const [method, path, body, loc] of [
        ['POST', '/users/ann/conversations', { title: text }, ['body', 'title']],
        [
          'PATCH',
          `/users/ann/conversations/${conversation.id}`,
          { title: text },
          ['body', 'title'],
        ],
        ['POST', '/chat', { user_id: 'ann', message: text }, ['body', 'message']],
        [
          'GET',
          `/users/ann/conversations/search?q=${encodeURIComponent(text)}`,
          undefined,
          ['query', 'q'],
        ],
        [
          'POST',
          '/users/ann/automations',
          { name: text, prompt: 'p', schedule: daily },
          ['body', 'name'],
        ],
        ['POST', '/users/ann/automations', { prompt: text, schedule: daily }, ['body', 'prompt']],
        ['PUT', '/users/ann/profile', { display_name: text }, ['body', 'display_name']],
        ['POST', '/admin/mcp-servers', { ...stdio, command: text }, ['body', 'command']],
        [
          'POST',
          '/admin/mcp-servers',
          { ...stdio, approval_tools: [text] },
          ['body', 'approval_tools', 0],
        ],
      ] as const) {
        const { status, body: error } = await send(method, path, body);
        expect(status, `${method} ${path} ${JSON.stringify(body)}`).toBe(422);
        expect(error.detail).toEqual([
          expect.objectContaining({ loc, msg: 'must contain a visible character' }),
        ]);
      }
    }
    const titles = (await send('GET', '/users/ann/conversations')).body as unknown as {
      conversations: { title: string }[];
    };
    expect(titles.conversations.map((c) => c.title)).toEqual(['']);
  });

  it('refuses a user id with nothing visible, or with half of a surrogate pair', async () => {
    for (const id of INVISIBLE) {
      for (const [method, path, body, loc] of [
        ['POST', '/chat', { user_id: id, message: 'Hi' }, ['body', 'user_id']],
        ['POST', `/reset?user_id=${encodeURIComponent(id)}`, undefined, ['query', 'user_id']],
        ['GET', `/users/${encodeURIComponent(id)}/conversations`, undefined, ['path', 'user_id']],
      ] as const) {
        const { status, body: error } = await send(method, path, body);
        expect(status, `${method} ${path} ${JSON.stringify(body)}`).toBe(422);
        expect(error.detail).toEqual([
          expect.objectContaining({ loc, msg: 'must contain a visible character' }),
        ]);
      }
    }
    // A user stored with such an id by an earlier version can still be exported and deleted.
    const blank = encodeURIComponent(INVISIBLE[0] as string);
    expect((await stack.parley.fetch(`/users/${blank}/export`)).status).toBe(200);
    expect(
      (await stack.parley.fetch(`/admin/users/${blank}`, { method: 'DELETE' })).status,
    ).not.toBe(422);
    // Only JSON can carry half of an emoji (a URL's bad UTF-8 is read as U+FFFD). Stored, it
    // would become U+FFFD: 'a\ud83d' and 'a\ud83e' would be one user.
    await expect422('POST', '/chat', { user_id: 'a\ud83d', message: 'Hi' }, ['body', 'user_id']);
    expect(stack.llm.requests).toHaveLength(0);
  });

  it("answers the model's tool call of invisible text with a tool error and stores nothing", async () => {
    const [text] = INVISIBLE as [string];
    const calls = [
      { name: 'set_reminder', args: { title: text, date: '2099-01-01' } },
      {
        name: 'create_automation',
        args: { prompt: text, schedule: { type: 'daily', time: '08:00' } },
      },
      { name: 'update_profile', args: { display_name: text } },
      { name: 'update_profile', args: { facts: { [text]: 'x' } } },
      { name: 'search_documents', args: { query: text } },
    ];
    stack.llm.enqueue(reply.toolCalls(calls), reply.text('Nothing to keep.'));
    expect((await stack.chat('zed', 'Remind me of this')).text).toBe('Nothing to keep.');
    const outputs = (stack.llm.chats.at(-1)?.body.messages ?? [])
      .filter((message) => message.role === 'tool')
      .map((message) => String(message.content));
    expect(outputs).toHaveLength(calls.length);
    for (const output of outputs) expect(output).toContain('must contain a visible character');
    const reminders = (await send('GET', '/reminders/zed')).body as unknown as {
      reminders: unknown[];
    };
    expect(reminders.reminders).toEqual([]);
    const automations = (await send('GET', '/users/zed/automations')).body as unknown as {
      automations: unknown[];
    };
    expect(automations.automations).toEqual([]);
    const profile = (await send('GET', '/users/zed/profile')).body as unknown as {
      display_name: unknown;
      facts: unknown;
    };
    expect(profile).toMatchObject({ display_name: null, facts: {} });
  });

  it('takes a message of MESSAGE_MAX_CHARS characters however its JSON escapes them', async () => {
    // Python's json.dumps writes each Korean character as `\ud55c`: 6 bytes, not 3.
    const escaped = (chars: number) => `"${'\\ud55c'.repeat(chars)}"`;
    const post = (path: string, raw: string) =>
      stack.parley.fetch(path, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: raw,
      });
    const chat = (chars: number) => post('/chat', `{"user_id":"kim","message":${escaped(chars)}}`);
    const completion = (chars: number) =>
      post(
        '/v1/chat/completions',
        `{"model":"parley","messages":[{"role":"user","content":${escaped(chars)}}]}`,
      );
    const taken = await chat(MESSAGE_MAX_CHARS);
    expect(taken.status).toBe(200);
    expect((await readChat(taken)).text).toBe('An answer.');
    const completed = await completion(MESSAGE_MAX_CHARS);
    expect(completed.status).toBe(200);
    // One more is the field's own refusal, not a 413 for the body.
    const over = await chat(MESSAGE_MAX_CHARS + 1);
    expect(over.status).toBe(422);
    expect(((await over.json()) as { detail: unknown }).detail).toEqual([
      expect.objectContaining({ loc: ['body', 'message'] }),
    ]);
    const overCompletion = await completion(MESSAGE_MAX_CHARS + 1);
    expect(overCompletion.status).toBe(400);
    expect(await overCompletion.json()).toMatchObject({
      error: { param: 'messages[0].content', code: 'string_above_max_length' },
    });
  });

  it('keeps a turn whose question holds half of an emoji', async () => {
    // A client that cuts text by UTF-16 length leaves half of a surrogate pair. PostgreSQL's
    // JSON refuses it: the answer streamed, then an internal_error, and the turn was lost.
    const half = `Cut here: ${'😀'.slice(0, 1)} and here ${'😀'.slice(1)}`;
    for (const [user, resumable] of [
      ['sue', false],
      ['sam', true],
    ] as const) {
      const asked = await stack.post('/chat', { user_id: user, message: half, resumable });
      const { raw, events } = await readAll(asked);
      expect(raw, user).not.toContain('__error');
      expect(textOf(events)).toBe('An answer.');
      const history = (await send('GET', `/users/${user}/history`)).body as unknown as {
        turns: { question: string; answer: string; status: string }[];
      };
      expect(history.turns).toEqual([
        expect.objectContaining({
          question: 'Cut here: \ufffd and here \ufffd',
          answer: 'An answer.',
          status: 'completed',
        }),
      ]);
    }
  });

  it('opens a conversation while an answer to half of an emoji is written in it', async () => {
    // The run registers its turn as JSON text, which the conversation page reads to name the
    // answer being written: a lone surrogate there made PostgreSQL's json refuse every read.
    const half = `Cut ${'😀'.slice(0, 1)} here`;
    const conversation = (await send('POST', '/users/hal/conversations', {})).body as unknown as {
      id: string;
    };
    const hold = holdAt((chunk) => chunk === 2);
    stack.llm.enqueue(reply.text('Held in the middle of its answer.', { pace: hold.pace }));
    const asked = await stack.post('/chat', {
      user_id: 'hal',
      message: half,
      conversation_id: conversation.id,
      resumable: true,
    });
    const runId = asked.headers.get('x-parley-run-id') as string;
    await hold.reached;
    const open = await send('GET', `/users/hal/conversations/${conversation.id}`);
    hold.release();
    expect(open.status).toBe(200);
    expect((open.body as unknown as { running: unknown }).running).toEqual({
      run_id: runId,
      question: 'Cut \ufffd here',
    });
    expect(textOf((await readAll(asked)).events)).toBe('Held in the middle of its answer.');
  });

  it('refuses a last OpenAI message with nothing to answer, as /chat does', async () => {
    // content null, absent, an empty list or only blanks: the model was asked nothing.
    for (const content of [null, undefined, [], '', '  \u200b ', [{ type: 'text', text: ' ' }]]) {
      const response = await stack.parley.fetch('/v1/chat/completions', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'parley',
          messages: [
            { role: 'user', content: 'Hello' },
            { role: 'assistant', content: 'Hi' },
            { role: 'user', content },
          ],
        }),
      });
      expect(response.status, JSON.stringify(content)).toBe(400);
      expect(await response.json()).toEqual({
        error: {
          message: 'The last message must contain a visible character.',
          type: 'invalid_request_error',
          param: 'messages[2].content',
          code: 'invalid_value',
        },
      });
    }
  });

  it('takes 2,048 OpenAI messages, as OpenAI does, and refuses more with a 400 naming them', async () => {
    const ask = (count: number) =>
      stack.parley.fetch('/v1/chat/completions', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'parley',
          messages: Array.from({ length: count }, (_, i) => ({
            role: i % 2 === 0 ? 'user' : 'assistant',
            content: `message ${i}`,
          })),
        }),
      });
    stack.llm.enqueue(reply.text('Read them all.'));
    // Odd counts: the last message is the user's.
    const taken = await ask(2047);
    expect(taken.status).toBe(200);
    const refused = await ask(2049);
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({
      error: { type: 'invalid_request_error', param: 'messages', code: 'invalid_value' },
    });
    const parts = await stack.parley.fetch('/v1/chat/completions', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'parley',
        messages: [
          {
            role: 'user',
            content: Array.from({ length: 2049 }, () => ({ type: 'text', text: 'a' })),
          },
        ],
      }),
    });
    expect(parts.status).toBe(400);
    expect(await parts.json()).toMatchObject({ error: { param: 'messages[0].content' } });
  });

  it('refuses a Last-Event-ID past the end of the run it names', async () => {
    const asked = await stack.post('/chat', { user_id: 'lee', message: 'Hi', resumable: true });
    const runId = asked.headers.get('x-parley-run-id') as string;
    const { events } = await readAll(asked);
    const last = lastEventId(events);
    expect(last).toBe(2); // the answer, then __done
    const follow = (headers: Record<string, string>, query = '') =>
      stack.parley.fetch(`/users/lee/runs/${runId}/events${query}`, { headers });
    // The id of __done: the client saw the end, and gets [DONE] alone.
    expect(await (await follow({ 'last-event-id': String(last) })).text()).toBe('data: [DONE]\n\n');
    // An id of another, longer stream named none of this one's events: it looked complete.
    for (const [headers, query, loc] of [
      [{ 'last-event-id': '41' }, '', ['header', 'last-event-id']],
      [{}, '?after=3', ['query', 'after']],
    ] as const) {
      const response = await follow(headers, query);
      expect(response.status, query).toBe(422);
      expect(await response.json()).toEqual({
        detail: [
          {
            loc,
            msg: 'is past the last event of this run (2): not an id of its stream',
            type: 'value_error',
          },
        ],
      });
    }
    // The log is what a later reader sees, once the run is no longer in memory.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect((await follow({ 'last-event-id': '41' })).status).toBe(422);
    expect(await (await follow({ 'last-event-id': '1' })).text()).toContain('"__done":true');
  });

  it('takes a UUID in upper case for the same run, conversation and server', async () => {
    const conversation = (await send('POST', '/users/ann/conversations', {})).body as unknown as {
      id: string;
    };
    const id = conversation.id;
    const hold = holdAt((chunk) => chunk === 2);
    stack.llm.enqueue(reply.text('Held in the middle of its answer.', { pace: hold.pace }));
    const asked = await stack.post('/chat', {
      user_id: 'ann',
      message: 'Where?',
      conversation_id: id.toUpperCase(),
      resumable: true,
    });
    expect(asked.status).toBe(200);
    expect(asked.headers.get('x-parley-conversation-id')).toBe(id);
    const runId = asked.headers.get('x-parley-run-id') as string;
    await hold.reached;
    // The answer being written is named however the conversation is written.
    for (const written of [id, id.toUpperCase()]) {
      const open = (await send('GET', `/users/ann/conversations/${written}`)).body as unknown as {
        running: unknown;
      };
      expect(open.running, written).toEqual({ run_id: runId, question: 'Where?' });
    }
    // Followed by its id in upper case, it is the same live answer, not one that died.
    const followed = await stack.parley.fetch(`/users/ann/runs/${runId.toUpperCase()}/events`);
    hold.release();
    const [first, seen] = await Promise.all([readAll(asked), readAll(followed)]);
    expect(seen.raw).toBe(first.raw);
    const again = await stack.parley.fetch(`/users/ann/runs/${runId.toUpperCase()}/events`);
    expect((await readAll(again)).raw).toBe(first.raw);

    const server = await send('POST', '/admin/mcp-servers', {
      transport: 'http',
      name: 'upper',
      url: 'http://127.0.0.1:1/mcp',
    });
    const serverId = (server.body as unknown as { id: string }).id;
    expect((await send('PATCH', `/admin/mcp-servers/${serverId}`, { enabled: true })).status).toBe(
      200,
    );
    // Its id was compared as text with the listed servers': a 404.
    const mine = await send('PUT', `/users/ann/mcp-servers/${serverId.toUpperCase()}`, {
      enabled: true,
    });
    expect(mine.status).toBe(200);
    expect(mine.body).toMatchObject({ id: serverId, enabled: true });
  });
});
