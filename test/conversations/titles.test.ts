import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readChat } from '../support/chat-stream.ts';
import { type EngineSetup, engineSetup } from '../support/engine-setup.ts';
import { ENGINES } from '../support/engines.ts';
import {
  type ChatCompletionRequest,
  type FakeLlmServer,
  reply,
} from '../support/fake-llm-server.ts';
import { longestHealthWait } from '../support/health-during.ts';
import type { Json } from '../support/json-call.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';

interface Conversation {
  id: string;
  title: string;
  title_source: string;
}

const isTitleRequest = (body: ChatCompletionRequest) =>
  body.messages.some(
    (m) => m.role === 'system' && String(m.content).includes('You name a conversation'),
  );
const promptOf = (body: ChatCompletionRequest) =>
  String(body.messages.find((m) => m.role === 'user')?.content);

describe.each(ENGINES)('conversation titles by the model on the %s engine', (engine) => {
  let parley: RunningParley;
  let llm: FakeLlmServer;
  let setup: EngineSetup;
  /** What the model answers a title request with, by the question it titles. */
  const titles = new Map<string, ReturnType<typeof reply.text> | ReturnType<typeof reply.error>>();

  beforeAll(async () => {
    setup = await engineSetup(engine);
    llm = setup.llm;
    llm.respond((body) => {
      if (!isTitleRequest(body)) return reply.text('Here is what I know.');
      const question = [...titles.keys()].find((q) => promptOf(body).includes(q));
      return (question && titles.get(question)) || reply.text('Untitled');
    });
    parley = await startParley({
      dataDir: setup.dataDir,
      env: {
        ...setup.env,
        CONVERSATION_TITLES: 'model',
      },
    });
  });
  afterAll(async () => {
    await parley?.stop();
    await setup?.cleanup();
  });

  const chat = async (user: string, message: string) => {
    const response = await parley.fetch('/chat', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ user_id: user, message }),
    });
    const conversationId = response.headers.get('x-parley-conversation-id') as string;
    return { ...(await readChat(response)), conversationId };
  };
  const conversation = async (user: string, id: string) =>
    (
      (await (await parley.fetch(`/users/${user}/conversations/${id}`)).json()) as {
        conversation: Conversation;
      }
    ).conversation;
  const titleRequests = () => llm.chats.filter((exchange) => isTitleRequest(exchange.body));
  const eventually = async <T>(read: () => Promise<T>, done: (value: T) => boolean) => {
    const until = Date.now() + 15_000;
    for (;;) {
      const value = await read();
      if (done(value) || Date.now() > until) return value;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  };

  it('titles a conversation after its first answer, in the background, once', async () => {
    titles.set('임대차 계약', reply.text('제목: "임대차 계약 질문."'));
    const first = await chat('jo', '임대차 계약은 언제 끝나요?');
    expect(first.text).toBe('Here is what I know.');
    const titled = await eventually(
      () => conversation('jo', first.conversationId),
      (c) => c.title_source === 'model',
    );
    expect(titled).toMatchObject({ title: '임대차 계약 질문', title_source: 'model' });
    const asked = titleRequests().filter((r) => promptOf(r.body).includes('임대차 계약'));
    expect(asked).toHaveLength(1);
    expect(promptOf(asked[0]?.body as ChatCompletionRequest)).toBe(
      'User: 임대차 계약은 언제 끝나요?\n\nAssistant: Here is what I know.',
    );
    // A title request is not streamed and carries no tools: it is not a chat.
    expect(asked[0]?.body.tools).toBeUndefined();

    await chat('jo', '보증금은요?');
    await parley.settled(300);
    expect(titleRequests().filter((r) => promptOf(r.body).includes('임대차 계약'))).toHaveLength(1);
  });

  it("never replaces the user's own title, and keeps a long one within 60 characters", async () => {
    const created = await parley.fetch('/users/kim/conversations', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ title: 'Mine' }),
    });
    const { id } = (await created.json()) as { id: string };
    titles.set('named by me', reply.text('Model title'));
    await chat('kim', 'named by me');
    await parley.settled(300);
    expect(await conversation('kim', id)).toMatchObject({ title: 'Mine', title_source: 'user' });
    expect(titleRequests().some((r) => promptOf(r.body).includes('named by me'))).toBe(false);

    await parley.fetch('/users/kim/conversations', { method: 'POST' });
    titles.set('a long one', reply.text(`${'word '.repeat(30)}end`));
    const long = await chat('kim', 'a long one');
    const titled = await eventually(
      () => conversation('kim', long.conversationId),
      (c) => c.title_source === 'model',
    );
    expect([...titled.title].length).toBeLessThanOrEqual(60);
    expect(titled.title.startsWith('word word')).toBe(true);
  });

  it('cleans a degenerate title (a long run of dots) at once, answering everyone meanwhile', async () => {
    // Small models loop: a run of marks before a last letter was stripped by a pattern that
    // tried the run again from each of its characters (seconds of the event loop).
    titles.set('dots please', reply.text(`“Lease${'.'.repeat(200_000)}x`));
    const asked = await chat('dot', 'dots please');
    const titled = eventually(
      () => conversation('dot', asked.conversationId),
      (c) => c.title_source === 'model',
    );
    const longestWaitMs = await longestHealthWait(parley, titled);
    expect((await titled).title).toBe(`Lease${'.'.repeat(54)}…`);
    expect(longestWaitMs).toBeLessThan(3_000);

    titles.set('closing marks', reply.text('Title: «The lease.»\u0007 '));
    const closed = await chat('marks', 'closing marks');
    expect(
      (
        await eventually(
          () => conversation('marks', closed.conversationId),
          (c) => c.title_source === 'model',
        )
      ).title,
    ).toBe('The lease');
  });

  it('cuts a long title between what a reader sees as characters: flags and families stay whole', async () => {
    // A flag is two code points, a family four joined by three more: cut at 59 code points,
    // a title of flags ended in half of one (a lone regional letter).
    titles.set('flags please', reply.text('🇰🇷'.repeat(40)));
    const asked = await chat('flag', 'flags please');
    const titled = await eventually(
      () => conversation('flag', asked.conversationId),
      (c) => c.title_source === 'model',
    );
    expect(titled.title).toBe(`${'🇰🇷'.repeat(29)}…`);

    // The question's first words, until the model writes a title, are cut the same way.
    titles.set('family', reply.error(500));
    const family = '👨‍👩‍👧‍👦';
    const question = `family ${family.repeat(10)}`;
    const named = await chat('fam', question);
    const first = await conversation('fam', named.conversationId);
    expect(first.title).toBe(`family ${family.repeat(7)}…`);
  });

  it('counts a title in characters (code points) alike for the model, a rename and the schema', async () => {
    const patch = (id: string, title: string) =>
      parley.fetch(`/users/eli/conversations/${id}`, {
        method: 'PATCH',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ title }),
      });
    // 70 emoji, each two UTF-16 units: cut to 59 and an ellipsis, never half of one.
    titles.set('emoji please', reply.text('😀'.repeat(70)));
    // The exchange the model is shown is cut too: here the 2,000th character is an emoji.
    const question = `emoji please ${'a'.repeat(1986)}${'😀'.repeat(10)}`;
    const asked = await chat('eli', question);
    const titled = await eventually(
      () => conversation('eli', asked.conversationId),
      (c) => c.title_source === 'model',
    );
    expect(titled.title).toBe(`${'😀'.repeat(59)}…`);
    expect(titled.title.isWellFormed()).toBe(true);
    const prompt = promptOf(
      titleRequests().find((r) => promptOf(r.body).includes('emoji please'))
        ?.body as ChatCompletionRequest,
    );
    expect(prompt.split('\n\n')[0]).toBe(`User: emoji please ${'a'.repeat(1986)}😀`);

    // What the model wrote, the user can write back; 60 emoji are 60 characters, 61 are not.
    expect((await patch(asked.conversationId, titled.title)).status).toBe(200);
    const sixty = '😀'.repeat(60);
    expect((await patch(asked.conversationId, sixty)).status).toBe(200);
    expect(await conversation('eli', asked.conversationId)).toMatchObject({
      title: sixty,
      title_source: 'user',
    });
    const tooLong = await patch(asked.conversationId, `${sixty}😀`);
    expect(tooLong.status).toBe(422);
    expect(JSON.stringify(await tooLong.json())).toContain('must be at most 60 characters');
    const created = await parley.fetch('/users/eli/conversations', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ title: `${sixty}😀` }),
    });
    expect(created.status).toBe(422);

    // A search is counted the same way: 200 emoji are a search, 201 are too long.
    const search = async (q: string) =>
      (await parley.fetch(`/users/eli/conversations/search?q=${encodeURIComponent(q)}`)).status;
    expect(await search('😀'.repeat(200))).toBe(200);
    expect(await search('😀'.repeat(201))).toBe(422);

    // The published schema says the same: JSON Schema's maxLength counts code points.
    const openapi = (await (await parley.fetch('/openapi.json')).json()) as {
      paths: Record<string, Record<string, Json>>;
    };
    const conversationPath = openapi.paths['/users/{user_id}/conversations/{conversation_id}'];
    expect(
      conversationPath?.patch?.requestBody.content['application/json'].schema.properties.title,
    ).toMatchObject({ maxLength: 60 });
    const searchParameters = openapi.paths['/users/{user_id}/conversations/search']?.get
      ?.parameters as Json[];
    expect(searchParameters.find((p) => p.name === 'q')?.schema).toMatchObject({
      maxLength: 200,
    });
  });

  it("keeps the question's first words when the model fails, and the answer never waits", async () => {
    titles.set('the model is down for titles', reply.error(500));
    const started = Date.now();
    const answered = await chat('lou', 'the model is down for titles, but answers');
    expect(answered.text).toBe('Here is what I know.');
    expect(Date.now() - started).toBeLessThan(5_000);
    await eventually(
      async () => titleRequests().filter((r) => promptOf(r.body).includes('down for titles')),
      (asked) => asked.length > 0,
    );
    await parley.settled(300);
    expect(await conversation('lou', answered.conversationId)).toMatchObject({
      title: 'the model is down for titles, but answers',
      title_source: 'question',
    });

    // Reasoning before the title is not part of it.
    titles.set(
      'thought about first',
      reply.text('<think>They ask about leases.</think>\n\nLease end'),
    );
    const thought = await chat('ren', 'thought about first');
    expect(
      await eventually(
        () => conversation('ren', thought.conversationId),
        (c) => c.title_source === 'model',
      ),
    ).toMatchObject({ title: 'Lease end', title_source: 'model' });

    // A title of nothing visible (zero-width spaces, a word joiner) would list as a blank row.
    titles.set('an invisible title', reply.text('"\u200b\u2060\u200b"'));
    const invisible = await chat('lia', 'an invisible title, please');
    await eventually(
      async () => titleRequests().filter((r) => promptOf(r.body).includes('invisible title')),
      (asked) => asked.length > 0,
    );
    await parley.settled(300);
    expect(await conversation('lia', invisible.conversationId)).toMatchObject({
      title: 'an invisible title, please',
      title_source: 'question',
    });
  });
  it('reads a title answer of 60,000 unclosed thinking tags in one pass, /health answering', async () => {
    // All of it is reasoning: no title. The SDK's regular expression searched the rest of the
    // text from each tag, and the event loop stood still for seconds.
    titles.set('endless thinking', reply.text('<think>'.repeat(60_000)));
    const answered = await chat('noa', 'endless thinking, and a title');
    let slowest = 0;
    while (!titleRequests().some((r) => promptOf(r.body).includes('endless thinking'))) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const until = Date.now() + 3_000;
    while (Date.now() < until) {
      const started = Date.now();
      expect((await parley.fetch('/health')).status).toBe(200);
      slowest = Math.max(slowest, Date.now() - started);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(slowest).toBeLessThan(1_000);
    await parley.settled(300);
    expect(await conversation('noa', answered.conversationId)).toMatchObject({
      title: 'endless thinking, and a title',
      title_source: 'question',
    });
  });
});
