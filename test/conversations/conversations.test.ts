import { Marked, type Tokens } from 'marked';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type ChatStream, readChat } from '../support/chat-stream.ts';
import { type EngineSetup, engineSetup } from '../support/engine-setup.ts';
import { ENGINES } from '../support/engines.ts';
import {
  type ChatCompletionRequest,
  type FakeLlmServer,
  reply,
} from '../support/fake-llm-server.ts';
import { longestHealthWait } from '../support/health-during.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';

interface Conversation {
  id: string;
  title: string;
  title_source: string;
  pinned: boolean;
  current: boolean;
  leaf_run_id: string | null;
  preview?: string;
  created_at: string;
  updated_at: string;
}
interface Turn {
  run_id: string;
  parent_run_id: string | null;
  question: string;
  answer: string;
  version: { index: number; count: number; previous: string | null; next: string | null };
}

const lastQuestion = (body: ChatCompletionRequest) =>
  String(body.messages.findLast((m) => m.role === 'user')?.content);
/** What the model was shown of the conversation: its user and assistant turns, in order. */
const shown = (body: ChatCompletionRequest) =>
  body.messages
    .filter((m) => m.role === 'user' || m.role === 'assistant')
    .map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content)));

describe.each(ENGINES)('conversations on the %s engine', (engine) => {
  let parley: RunningParley;
  let llm: FakeLlmServer;
  let setup: EngineSetup;

  beforeAll(async () => {
    // A server database writing dates day first: Parley must not depend on its DateStyle.
    setup = await engineSetup(engine, {}, {}, { datestyle: 'SQL, DMY' });
    llm = setup.llm;
    parley = await startParley({ dataDir: setup.dataDir, env: setup.env });
  });
  afterAll(async () => {
    await parley?.stop();
    await setup?.cleanup();
  });
  beforeEach(() => {
    llm.respond((body) => reply.text(`answer to ${lastQuestion(body)}`));
  });

  const json = async (path: string, init?: { method?: string; body?: unknown }) => {
    const response = await parley.fetch(path, {
      method: init?.method ?? 'GET',
      ...(init?.body === undefined
        ? {}
        : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(init.body) }),
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };
  const chat = async (
    body: Record<string, unknown>,
  ): Promise<ChatStream & { conversationId: string | null; status: number }> => {
    const response = await parley.fetch('/chat', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const conversationId = response.headers.get('x-parley-conversation-id');
    if (response.status !== 200) {
      return { ...(await readChat(new Response(''))), conversationId, status: response.status };
    }
    return { ...(await readChat(response)), conversationId, status: response.status };
  };
  const list = async (user: string, query = '') =>
    (await json(`/users/${user}/conversations${query}`)).body as {
      conversations: Conversation[];
      next_cursor: string | null;
    };
  const read = async (user: string, id: string, query = '') =>
    (await json(`/users/${user}/conversations/${id}${query}`)).body as {
      conversation: Conversation;
      turns: Turn[];
      next_before: string | null;
    };

  // First, while the messages' ids are small: a few turns take them past a power of ten.
  it('exports the turns in the order they were asked, across ids of more digits', async () => {
    const first = await chat({ user_id: 'ord', message: 'turn 1' });
    const id = first.conversationId as string;
    const newest = async () => (await read('ord', id, '?limit=1')).next_before as string;
    const start = await newest();
    const asked = ['turn 1'];
    // Until a message's id has more digits than the first one's (bounded: from 2 digits, 50).
    while ((await newest()).length === start.length && asked.length < 60) {
      asked.push(`turn ${asked.length + 1}`);
      await chat({ user_id: 'ord', message: asked.at(-1) });
    }
    expect((await newest()).length).toBeGreaterThan(start.length);

    const markdown = await (await parley.fetch(`/users/ord/conversations/${id}/export`)).text();
    const questions = [...markdown.matchAll(/^> (.*)$/gm)].map((match) => match[1]);
    expect(questions).toEqual(asked);
    const exported = (await json(`/users/ord/conversations/${id}/export?format=json`)).body as {
      messages: Array<{ role: string; text: string }>;
    };
    expect(exported.messages.map((m) => m.text)).toEqual(
      asked.flatMap((question) => [question, `answer to ${question}`]),
    );
  });

  it('gives a spec client one current conversation, named in a header, its events unchanged', async () => {
    const first = await chat({ user_id: 'ada', message: 'What is   a lease, in short?' });
    const second = await chat({ user_id: 'ada', message: 'And a deposit?' });
    expect(first.conversationId).toMatch(/^[0-9a-f-]{36}$/);
    expect(second.conversationId).toBe(first.conversationId);
    expect(second.raw).toBe(
      `data: "answer to And a deposit?"\n\ndata: {"__done":true,"run_id":"${second.runId}"}\n\ndata: [DONE]\n\n`,
    );
    expect(shown(llm.chats.at(-1)?.body as ChatCompletionRequest)).toEqual([
      'What is   a lease, in short?',
      'answer to What is   a lease, in short?',
      'And a deposit?',
    ]);
    const { conversations } = await list('ada');
    expect(conversations).toHaveLength(1);
    expect(conversations[0]).toMatchObject({
      id: first.conversationId,
      title: 'What is a lease, in short?',
      title_source: 'question',
      current: true,
      pinned: false,
      leaf_run_id: second.runId,
      preview: 'answer to And a deposit?',
    });
    const history = (await json('/users/ada/history')).body as { turns: Turn[] };
    expect(history.turns.map((turn) => turn.question)).toEqual([
      'And a deposit?',
      'What is   a lease, in short?',
    ]);
  });

  it('starts new conversations and keeps the old ones; a conversation_id continues one', async () => {
    const old = await chat({ user_id: 'bea', message: 'first topic' });
    const created = await json('/users/bea/conversations', { method: 'POST', body: {} });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ title: '', current: true, leaf_run_id: null });
    const fresh = await chat({ user_id: 'bea', message: 'second topic' });
    expect(fresh.conversationId).toBe(created.body.id);
    expect(shown(llm.chats.at(-1)?.body as ChatCompletionRequest)).toEqual(['second topic']);

    // Back to the first one: it continues with its own history, and becomes current.
    const back = await chat({
      user_id: 'bea',
      message: 'more on the first',
      conversation_id: old.conversationId,
    });
    expect(back.conversationId).toBe(old.conversationId);
    expect(shown(llm.chats.at(-1)?.body as ChatCompletionRequest)).toEqual([
      'first topic',
      'answer to first topic',
      'more on the first',
    ]);
    let page = await list('bea');
    expect(page.conversations.map((c) => [c.title, c.current])).toEqual([
      ['first topic', true],
      ['second topic', false],
    ]);

    // Pinned first; renamed by the user; paged by cursor.
    const pinned = await json(`/users/bea/conversations/${created.body.id}`, {
      method: 'PATCH',
      body: { pinned: true, title: '  Topic two  ' },
    });
    expect(pinned.body).toMatchObject({ pinned: true, title: 'Topic two', title_source: 'user' });
    await json('/users/bea/conversations', { method: 'POST', body: { title: 'Third' } });
    page = await list('bea', '?limit=2');
    expect(page.conversations.map((c) => c.title)).toEqual(['Topic two', 'Third']);
    expect(page.next_cursor).toEqual(expect.any(String));
    const next = await list('bea', `?limit=2&cursor=${page.next_cursor}`);
    expect(next.conversations.map((c) => c.title)).toEqual(['first topic']);
    expect(next.next_cursor).toBeNull();
    // Times read back are today's whatever the database's DateStyle (not 1970: unread, null).
    const ages = [...page.conversations, ...next.conversations].map(
      (c) => Date.now() - Date.parse(c.updated_at),
    );
    expect(
      ages.every((age) => age >= 0 && age < 600_000),
      String(ages),
    ).toBe(true);

    expect(
      (await chat({ user_id: 'bea', message: 'x', conversation_id: crypto.randomUUID() })).status,
    ).toBe(404);
    expect((await chat({ user_id: 'bea', message: 'x', conversation_id: 'nope' })).status).toBe(
      422,
    );
    expect(
      (await chat({ user_id: 'ada', message: 'x', conversation_id: old.conversationId })).status,
    ).toBe(404);
    // Another user's conversation is not found under one's own user id.
    expect((await json(`/users/ada/conversations/${old.conversationId}`)).status).toBe(404);
  });

  it('refuses bad input with 422, never a 500', async () => {
    const bad = [
      ['GET', '/users/bea/conversations?limit=0'],
      ['GET', '/users/bea/conversations?limit=101'],
      ['GET', '/users/bea/conversations?cursor=bm90LWEtY3Vyc29y'],
      ['GET', '/users/bea/conversations/not-a-uuid'],
      ['GET', '/users/bea/conversations/search?q='],
      ['GET', `/users/bea/conversations/search?q=${'a'.repeat(201)}`],
      ['GET', '/users/bea/conversations/search?q=a&before=x'],
    ] as const;
    for (const [method, path] of bad) {
      expect((await json(path, { method })).status, path).toBe(422);
    }
    const id = (await list('bea')).conversations[0]?.id;
    for (const body of [{}, { title: '' }, { title: 'x'.repeat(61) }, { pinned: 'yes' }]) {
      const response = await json(`/users/bea/conversations/${id}`, { method: 'PATCH', body });
      expect(response.status, JSON.stringify(body)).toBe(422);
    }
    const both = await chat({
      user_id: 'bea',
      message: 'x',
      parent: crypto.randomUUID(),
      regenerate: crypto.randomUUID(),
    });
    expect(both.status).toBe(422);
  });

  it('keeps every version of an edited or regenerated turn; the model sees only the path', async () => {
    const q1 = await chat({ user_id: 'cy', message: 'q1' });
    const q2 = await chat({ user_id: 'cy', message: 'q2' });
    const q3 = await chat({ user_id: 'cy', message: 'q3' });
    const id = q1.conversationId as string;

    llm.respond((body) => reply.text(`another answer to ${lastQuestion(body)}`));
    const again = await chat({ user_id: 'cy', message: 'q2', regenerate: q2.runId });
    expect(shown(llm.chats.at(-1)?.body as ChatCompletionRequest)).toEqual([
      'q1',
      'answer to q1',
      'q2',
    ]);
    let page = await read('cy', id);
    expect(page.turns.map((t) => [t.question, t.answer])).toEqual([
      ['q2', 'another answer to q2'],
      ['q1', 'answer to q1'],
    ]);
    expect(page.turns[0]?.version).toEqual({
      index: 2,
      count: 2,
      previous: q2.runId,
      next: null,
    });
    expect(page.turns[0]?.parent_run_id).toBe(q1.runId);
    expect(page.conversation.leaf_run_id).toBe(again.runId);

    // An edited question, branching after q1 again: a third version.
    const edited = await chat({ user_id: 'cy', message: 'q2 edited', parent: q1.runId });
    llm.respond((body) => reply.text(`answer to ${lastQuestion(body)}`));
    await chat({ user_id: 'cy', message: 'q4' });
    expect(shown(llm.chats.at(-1)?.body as ChatCompletionRequest)).toEqual([
      'q1',
      'answer to q1',
      'q2 edited',
      'another answer to q2 edited',
      'q4',
    ]);
    page = await read('cy', id);
    expect(page.turns.map((t) => t.question)).toEqual(['q4', 'q2 edited', 'q1']);
    expect(page.turns[1]?.version).toMatchObject({ index: 3, count: 3, previous: again.runId });

    // The spec's history shows the active path, linear.
    const history = (await json('/users/cy/history')).body as { turns: Turn[] };
    expect(history.turns.map((t) => t.question)).toEqual(['q4', 'q2 edited', 'q1']);

    // Back to the first version of q2: its own continuation comes back with it.
    const selected = await json(`/users/cy/conversations/${id}/select`, {
      method: 'POST',
      body: { run_id: q2.runId },
    });
    expect(selected).toEqual({
      status: 200,
      body: { conversation_id: id, leaf_run_id: q3.runId },
    });
    page = await read('cy', id);
    expect(page.turns.map((t) => t.question)).toEqual(['q3', 'q2', 'q1']);
    expect(page.turns[1]?.version).toEqual({
      index: 1,
      count: 3,
      previous: null,
      next: again.runId,
    });
    await chat({ user_id: 'cy', message: 'q5' });
    expect(shown(llm.chats.at(-1)?.body as ChatCompletionRequest)).toEqual([
      'q1',
      'answer to q1',
      'q2',
      'answer to q2',
      'q3',
      'answer to q3',
      'q5',
    ]);

    // A new first question: the whole conversation branches at its root.
    await chat({ user_id: 'cy', message: 'q1 again', parent: null });
    expect(shown(llm.chats.at(-1)?.body as ChatCompletionRequest)).toEqual(['q1 again']);
    page = await read('cy', id);
    expect(page.turns.map((t) => t.question)).toEqual(['q1 again']);
    expect(page.turns[0]?.version).toMatchObject({ index: 2, count: 2, previous: q1.runId });

    // Turns that are not this conversation's are not found.
    expect((await chat({ user_id: 'cy', message: 'x', parent: crypto.randomUUID() })).status).toBe(
      404,
    );
    const select = await json(`/users/cy/conversations/${id}/select`, {
      method: 'POST',
      body: { run_id: crypto.randomUUID() },
    });
    expect(select.status).toBe(404);
    expect(edited.status).toBe(200);
  });

  it('leaves the current conversation as it was when a chat names a turn not in the one it names', async () => {
    const first = await chat({ user_id: 'cur', message: 'in the first' });
    const other = await chat({ user_id: 'kit', message: 'not hers' });
    await json('/users/cur/conversations', { method: 'POST', body: {} });
    const second = await chat({ user_id: 'cur', message: 'in the second' });
    for (const body of [
      { conversation_id: first.conversationId, parent: crypto.randomUUID() },
      { conversation_id: first.conversationId, regenerate: second.runId },
      { conversation_id: first.conversationId, parent: other.runId },
      { conversation_id: other.conversationId, parent: other.runId },
    ]) {
      const refused = await chat({ user_id: 'cur', message: 'edit', ...body });
      expect([body, refused.status]).toEqual([body, 404]);
    }
    expect((await list('cur')).conversations.map((c) => [c.id, c.current])).toEqual([
      [second.conversationId, true],
      [first.conversationId, false],
    ]);
    // The next chat without a conversation_id still goes to the second.
    expect((await chat({ user_id: 'cur', message: 'still here' })).conversationId).toBe(
      second.conversationId,
    );
  });

  it('pages a long active path, newest first', async () => {
    const created = await json('/users/dee/conversations', { method: 'POST', body: {} });
    for (let i = 1; i <= 5; i++) await chat({ user_id: 'dee', message: `n${i}` });
    const id = created.body.id as string;
    const first = await read('dee', id, '?limit=2');
    expect(first.turns.map((t) => t.question)).toEqual(['n5', 'n4']);
    const second = await read('dee', id, `?limit=2&before=${first.next_before}`);
    expect(second.turns.map((t) => t.question)).toEqual(['n3', 'n2']);
    const last = await read('dee', id, `?limit=2&before=${second.next_before}`);
    expect(last.turns.map((t) => t.question)).toEqual(['n1']);
    expect(last.next_before).toBeNull();
  });

  it('clears only the current conversation on /reset, and keeps it current', async () => {
    const kept = await chat({ user_id: 'eve', message: 'keep me' });
    await json('/users/eve/conversations', { method: 'POST', body: {} });
    const cleared = await chat({ user_id: 'eve', message: 'clear me' });
    const reset = await json('/reset?user_id=eve', { method: 'POST' });
    expect(reset.body).toEqual({ reset: true, user_id: 'eve' });
    expect((await read('eve', cleared.conversationId as string)).turns).toEqual([]);
    expect((await read('eve', kept.conversationId as string)).turns.map((t) => t.question)).toEqual(
      ['keep me'],
    );
    expect((await json('/users/eve/history')).body.turns).toEqual([]);
    const after = await chat({ user_id: 'eve', message: 'start over' });
    expect(after.conversationId).toBe(cleared.conversationId);
    expect(shown(llm.chats.at(-1)?.body as ChatCompletionRequest)).toEqual(['start over']);
    const { conversations } = await list('eve');
    expect(conversations.find((c) => c.id === cleared.conversationId)?.title).toBe('start over');
    // A user who never chatted: nothing to clear, still 200.
    expect((await json('/reset?user_id=nobody-yet', { method: 'POST' })).status).toBe(200);
  });

  it('finds words in questions and answers, English and Korean, with the turn they are in', async () => {
    llm.respond((body) => {
      const question = lastQuestion(body);
      return reply.text(
        question.includes('lease')
          ? 'Your leases end in March; the deposit comes back then.'
          : '계약서는 어제 이메일로 보냈어요.',
      );
    });
    const english = await chat({ user_id: 'fay', message: 'When does my lease end?' });
    await json('/users/fay/conversations', { method: 'POST', body: {} });
    const korean = await chat({ user_id: 'fay', message: '임대차 계약서를 다시 보내 주세요' });
    await chat({ user_id: 'gus', message: 'When does my lease end?' });

    const search = async (q: string) =>
      (await json(`/users/fay/conversations/search?q=${encodeURIComponent(q)}`)).body as {
        results: Array<{
          conversation_id: string;
          run_id: string;
          role: string;
          snippet: string;
          title: string;
          on_path: boolean;
        }>;
      };
    const lease = await search('lease');
    expect(lease.results.map((r) => [r.role, r.run_id])).toEqual([
      ['assistant', english.runId],
      ['user', english.runId],
    ]);
    expect(lease.results[0]).toMatchObject({
      conversation_id: english.conversationId,
      title: 'When does my lease end?',
      on_path: true,
    });
    expect(lease.results[0]?.snippet).toContain('leases end in March');
    expect((await search('deposit March')).results).toHaveLength(1);
    expect((await search('what about the lease?')).results).toHaveLength(2);
    expect((await search('lease October')).results).toEqual([]);

    // Korean words match with their particles: 계약서 finds 계약서를 and 계약서는.
    const contract = await search('계약서');
    expect(contract.results.map((r) => [r.role, r.run_id])).toEqual([
      ['assistant', korean.runId],
      ['user', korean.runId],
    ]);
    expect(contract.results[1]?.snippet).toContain('임대차 계약서를');
    expect((await search('임대차')).results.map((r) => r.role)).toEqual(['user']);
    expect((await search('이메일')).results.map((r) => r.role)).toEqual(['assistant']);
    expect((await search('전세')).results).toEqual([]);
    // Gus asked the same: his words are his, never in Fay's results (both are exactly hers).
    expect(lease.results.every((r) => r.run_id === english.runId)).toBe(true);
  });

  it('finds a file name, a version, an address as typed; search syntax is only words', async () => {
    llm.respond(() => reply.text('Noted.'));
    const asked = await chat({
      user_id: 'fin',
      message: 'Send report.pdf to kim@example.com, about GPT 3.5 and https://example.com/docs',
    });
    const found = async (q: string) =>
      (
        (await json(`/users/fin/conversations/search?q=${encodeURIComponent(q)}`)).body as {
          results: Array<{ run_id: string; role: string }>;
        }
      ).results.map((r) => [r.role, r.run_id]);
    for (const q of ['report.pdf', '3.5', 'kim@example.com', 'example.com', 'example.com/docs']) {
      expect([q, await found(q)]).toEqual([q, [['user', asked.runId]]]);
    }
    expect(await found('"report.pdf",')).toEqual([['user', asked.runId]]);
    expect(await found('report.docx')).toEqual([]);
    // tsquery's operators and quoting are plain characters here: never a 500.
    for (const q of ["& | ! : * ( ) '", '\\', "report:* | !kim & 'x", '((((', '가\\나']) {
      const response = await json(`/users/fin/conversations/search?q=${encodeURIComponent(q)}`);
      expect([q, response.status]).toEqual([q, 200]);
    }
  });

  it('cuts a snippet between characters, never inside an emoji', async () => {
    // "target" at unit 81: the snippet's 60 units before it and 120 after fall mid-emoji.
    const message = `${'😀'.repeat(40)} target ${'🌞'.repeat(80)}`;
    await chat({ user_id: 'emo', message });
    const found = await json('/users/emo/conversations/search?q=target');
    const snippets = (found.body.results as Array<{ snippet: string }>).map((r) => r.snippet);
    expect(snippets).toHaveLength(2);
    for (const snippet of snippets) {
      expect(snippet.isWellFormed(), JSON.stringify(snippet)).toBe(true);
      expect(snippet).toMatch(/^…(😀)+ target (🌞)+…$/u);
    }
  });

  it('centres a snippet on the word found after letters that lower-case longer (İ)', async () => {
    // "İ" lower-cases to two units: positions found in the lower-cased text drifted one unit
    // a letter in the original, and 130 of them left the word out of its snippet.
    const message = `İstanbul ${'İ'.repeat(130)} the ferry timetable`;
    await chat({ user_id: 'ist', message });
    const found = await json('/users/ist/conversations/search?q=timetable');
    const snippets = (found.body.results as Array<{ snippet: string }>).map((r) => r.snippet);
    expect(snippets).toHaveLength(2);
    for (const snippet of snippets) expect(snippet).toContain('the ferry timetable');
  });

  it('exports an answer with a long run of backticks at once, answering everyone meanwhile', async () => {
    llm.respond(() => reply.text(`Look:\n${'`'.repeat(200_000)}\r\nDone.`));
    const asked = await chat({ user_id: 'ticks', message: 'show me' });
    const exported = parley.fetch(`/users/ticks/conversations/${asked.conversationId}/export`);
    const longestWaitMs = await longestHealthWait(parley, exported);
    const markdown = await (await exported).text();
    expect(markdown).toContain('Done.');
    expect(longestWaitMs).toBeLessThan(3_000);
  });

  it('exports a conversation as Markdown (the path) and JSON (every version)', async () => {
    const first = await chat({ user_id: 'hal', message: '# Not a heading' });
    await chat({ user_id: 'hal', message: 'again', regenerate: first.runId });
    const id = first.conversationId as string;
    const markdown = await parley.fetch(`/users/hal/conversations/${id}/export`);
    expect(markdown.headers.get('content-type')).toBe('text/markdown; charset=utf-8');
    const text = await markdown.text();
    expect(text).toContain('# # Not a heading');
    expect(text).toContain('> again');
    expect(text).toContain('answer to again');
    expect(text).not.toContain('> # Not a heading');

    const exported = (await json(`/users/hal/conversations/${id}/export?format=json`)).body as {
      conversation: { id: string };
      messages: Array<{ run_id: string; role: string; text: string; on_path: boolean }>;
    };
    expect(exported.conversation.id).toBe(id);
    expect(exported.messages.map((m) => [m.role, m.text, m.on_path])).toEqual([
      ['user', '# Not a heading', false],
      ['assistant', 'answer to # Not a heading', false],
      ['user', 'again', true],
      ['assistant', 'answer to again', true],
    ]);
    expect((await json(`/users/hal/conversations/${crypto.randomUUID()}/export`)).status).toBe(404);

    // The user's own export holds every conversation and every version, with its place.
    const all = (await json('/users/hal/export')).body as {
      conversations: Array<{ id: string; current: boolean }>;
      messages: Array<{ conversation_id: string; parent_run_id: string | null; on_path: boolean }>;
    };
    expect(all.conversations.map((c) => [c.id, c.current])).toEqual([[id, true]]);
    expect(all.messages.map((m) => [m.conversation_id, m.parent_run_id, m.on_path])).toEqual([
      [id, null, false],
      [id, null, false],
      [id, null, true],
      [id, null, true],
    ]);
  });

  it('exports an answer that left a code block open without swallowing the turns after it', async () => {
    llm.respond(() => reply.text('Here:\n\n```python\nprint("cut off here'));
    const first = await chat({ user_id: 'hex', message: 'code please' });
    llm.respond(() => reply.text('~~~~\nstill code?\n~~~\n## Not a turn heading'));
    await chat({ user_id: 'hex', message: 'second' });
    llm.respond((body) => reply.text(`answer to ${lastQuestion(body)}`));
    await chat({ user_id: 'hex', message: 'third' });
    const response = await parley.fetch(`/users/hex/conversations/${first.conversationId}/export`);
    const tokens = new Marked().lexer(await response.text());
    // What a reader sees: a heading and a quoted question per turn, one code block per answer.
    expect(tokens.filter((t) => t.type === 'heading' && t.depth === 2)).toHaveLength(3);
    expect(
      tokens.filter((t): t is Tokens.Blockquote => t.type === 'blockquote').map((t) => t.text),
    ).toEqual(['code please', 'second', 'third']);
    expect(tokens.filter((t): t is Tokens.Code => t.type === 'code').map((t) => t.text)).toEqual([
      'print("cut off here',
      'still code?\n~~~\n## Not a turn heading',
    ]);
    expect(tokens.findLast((t) => t.type !== 'space')).toMatchObject({
      type: 'paragraph',
      text: 'answer to third',
    });
  });

  it('writes every time of an export as the API does (toISOString, with Z)', async () => {
    const first = await chat({ user_id: 'iso', message: 'when was this?' });
    const id = first.conversationId as string;
    expect(
      (await json('/feedback', { method: 'POST', body: { run_id: first.runId, score: 1 } })).status,
    ).toBe(200);
    const [listed] = (await list('iso')).conversations;
    const [turn] = (await read('iso', id)).turns as Array<Turn & { created_at: string }>;
    const iso = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
    expect(listed?.updated_at).toMatch(iso);

    const exported = (await json(`/users/iso/conversations/${id}/export?format=json`)).body as {
      exported_at: string;
      conversation: { created_at: string; updated_at: string };
      messages: Array<{ created_at: string }>;
    };
    expect(exported.exported_at).toMatch(iso);
    expect(exported.conversation).toMatchObject({
      created_at: listed?.created_at,
      updated_at: listed?.updated_at,
    });
    expect(exported.messages.map((m) => m.created_at)).toEqual([
      turn?.created_at,
      turn?.created_at,
    ]);
    const markdown = await (await parley.fetch(`/users/iso/conversations/${id}/export`)).text();
    expect(markdown).toContain(`## ${turn?.created_at}\n`);

    // The user's whole export: its columns and the times inside its nested lists alike.
    const all = (await json('/users/iso/export')).body as {
      conversations: Array<{ created_at: string; updated_at: string }>;
      runs: Array<{
        started_at: string;
        finished_at: string;
        feedback: Array<{ created_at: string }>;
      }>;
    };
    expect(all.conversations).toEqual([
      expect.objectContaining({
        created_at: listed?.created_at,
        updated_at: listed?.updated_at,
      }),
    ]);
    const [run] = all.runs;
    expect([run?.started_at, run?.finished_at, run?.feedback[0]?.created_at]).toEqual([
      expect.stringMatching(iso),
      expect.stringMatching(iso),
      expect.stringMatching(iso),
    ]);
  });

  it('deletes one conversation or all of them; the next chat starts a new one', async () => {
    const one = await chat({ user_id: 'ivy', message: 'one' });
    // No body at all is a conversation without a title, as `{}` is.
    expect((await json('/users/ivy/conversations', { method: 'POST' })).status).toBe(201);
    const two = await chat({ user_id: 'ivy', message: 'two' });
    const deleted = await json(`/users/ivy/conversations/${one.conversationId}`, {
      method: 'DELETE',
    });
    expect(deleted.body).toEqual({ user_id: 'ivy', deleted: 1 });
    expect((await json(`/users/ivy/conversations/${one.conversationId}`)).status).toBe(404);
    expect((await list('ivy')).conversations.map((c) => c.id)).toEqual([two.conversationId]);
    expect(
      (await json(`/users/ivy/conversations/${one.conversationId}`, { method: 'DELETE' })).status,
    ).toBe(404);
    expect((await json('/users/ivy/conversations/search?q=one')).body.results).toEqual([]);

    const all = await json('/users/ivy/conversations', { method: 'DELETE' });
    expect(all.body).toEqual({ user_id: 'ivy', deleted: 1 });
    expect((await list('ivy')).conversations).toEqual([]);
    const after = await chat({ user_id: 'ivy', message: 'three' });
    expect(after.conversationId).not.toBe(two.conversationId);
    expect(shown(llm.chats.at(-1)?.body as ChatCompletionRequest)).toEqual(['three']);
  });

  it('lists every conversation route in the OpenAPI document', async () => {
    const document = (await json('/openapi.json')).body as { paths: Record<string, unknown> };
    expect(Object.keys(document.paths).filter((path) => path.includes('conversations'))).toEqual([
      '/users/{user_id}/conversations',
      '/users/{user_id}/conversations/{conversation_id}',
      '/users/{user_id}/conversations/{conversation_id}/select',
      '/users/{user_id}/conversations/search',
      '/users/{user_id}/conversations/{conversation_id}/export',
    ]);
  });
});
