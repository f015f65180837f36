import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ReplicaStack, startEngineStack, startReplicas } from '../support/chat-stack.ts';
import { readChat } from '../support/chat-stream.ts';
import { ENGINES } from '../support/engines.ts';
import { reply } from '../support/fake-llm-server.ts';
import { multipartBody } from '../support/multipart.ts';
import type { RunningParley } from '../support/start-parley.ts';

// biome-ignore lint/suspicious/noExplicitAny: JSON bodies read in assertions
type Json = any;
const json = async (response: Response): Promise<Json> => response.json();

const ADMIN = 'limits-admin-token';

const asJson = (
  token: string,
  body?: unknown,
  method = 'POST',
): RequestInit & { token: string } => ({
  method,
  token,
  ...(body === undefined
    ? {}
    : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
});

async function createUser(parley: RunningParley, userId: string, limits?: Record<string, number>) {
  const created = await parley.fetch('/admin/users', asJson(ADMIN, { user_id: userId }));
  expect(created.status).toBe(201);
  const { key } = (await created.json()) as { key: string };
  if (limits) {
    const patched = await parley.fetch(
      `/admin/users/${userId}`,
      asJson(ADMIN, { limits }, 'PATCH'),
    );
    expect(patched.status).toBe(200);
  }
  return key;
}

/** Uploads a text file as the key's user (a private document). */
function uploadText(parley: RunningParley, key: string, name: string, text: string) {
  const { body, contentType } = multipartBody([{ name: 'file', filename: name, data: text }]);
  return parley.fetch('/ingest', {
    method: 'POST',
    token: key,
    headers: { 'content-type': contentType },
    body: new Uint8Array(body),
  });
}

/** Sends chats at once and sorts the answers: streams read to their end, refusals kept. */
async function chatAtOnce(sends: Array<() => Promise<Response>>) {
  const responses = await Promise.all(sends.map((send) => send()));
  const streams = [];
  const refused = [];
  for (const response of responses) {
    if (response.status === 200) streams.push(await readChat(response));
    else
      refused.push({
        status: response.status,
        retryAfter: response.headers.get('retry-after'),
        body: await response.json(),
      });
  }
  return { streams, refused };
}

describe.each(ENGINES)('per-user limits on the %s engine', (engine) => {
  let stack: Awaited<ReturnType<typeof startEngineStack>>;

  beforeAll(async () => {
    stack = await startEngineStack(engine, { API_TOKEN: ADMIN, EMBEDDINGS_PROVIDER: 'none' });
    stack.llm.respond(() =>
      reply.text('A short answer.', { usage: { prompt: 40, completion: 10 } }),
    );
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('admits exactly the limit of 20 chats sent at once, and refuses the rest with Retry-After', async () => {
    const key = await createUser(stack.parley, 'rate-user', { chats_per_minute: 5 });
    const { streams, refused } = await chatAtOnce(
      Array.from(
        { length: 20 },
        () => () => stack.parley.fetch('/chat', asJson(key, { message: 'hi' })),
      ),
    );
    expect(streams).toHaveLength(5);
    for (const stream of streams) expect(stream.text).toBe('A short answer.');
    expect(refused).toHaveLength(15);
    for (const answer of refused) {
      expect(answer.status).toBe(429);
      expect(answer.body).toEqual({ detail: expect.stringContaining('5 a minute') });
      // The fifth chat moved the rate a minute ahead: the next fits 12 s later.
      expect(Number(answer.retryAfter)).toBeGreaterThanOrEqual(1);
      expect(Number(answer.retryAfter)).toBeLessThanOrEqual(12);
    }
    const usage = await json(await stack.parley.fetch('/users/rate-user/usage', { token: key }));
    expect(usage).toMatchObject({
      user_id: 'rate-user',
      chats_last_minute: 5,
      limits: { chats_per_minute: 5 },
    });
  });

  it('enforces a lowered chat rate on the replica that changed it at once', async () => {
    const key = await createUser(stack.parley, 'lowered-user', { chats_per_minute: 2 });
    // One chat moves the rate 30 s ahead: at 2 a minute the next fits at once. (Not closer:
    // on a loaded machine the chat, the PATCH and the next request can take seconds.)
    const first = await readChat(
      await stack.parley.fetch('/chat', asJson(key, { message: 'one' })),
    );
    expect(first.text).toBe('A short answer.');
    const lowered = await stack.parley.fetch(
      '/admin/users/lowered-user',
      asJson(ADMIN, { limits: { chats_per_minute: 1 } }, 'PATCH'),
    );
    expect(lowered.status).toBe(200);
    // At 1 a minute it does not: refused, though the old limit was read a moment ago.
    const refused = await stack.parley.fetch('/chat', asJson(key, { message: 'two' }));
    expect(refused.status).toBe(429);
    expect(await json(refused)).toEqual({ detail: expect.stringContaining('1 a minute') });
    const wait = Number(refused.headers.get('retry-after'));
    expect(wait).toBeGreaterThanOrEqual(1);
    expect(wait).toBeLessThanOrEqual(30);
  });

  it("does not limit the administrator's token unless told to, but counts for the user named", async () => {
    await createUser(stack.parley, 'fronted', { chats_per_minute: 1 });
    const { streams, refused } = await chatAtOnce(
      Array.from(
        { length: 3 },
        () => () =>
          stack.parley.fetch('/chat', asJson(ADMIN, { message: 'hi', user_id: 'fronted' })),
      ),
    );
    expect(streams).toHaveLength(3);
    expect(refused).toHaveLength(0);
    const usage = await json(await stack.parley.fetch('/users/fronted/usage', { token: ADMIN }));
    expect(usage.chats_last_minute).toBe(3);
  });

  it("refuses a chat once today's tokens are used up, and says when they reset", async () => {
    const key = await createUser(stack.parley, 'token-user', {
      tokens_per_day: 100,
      chats_per_minute: 0,
    });
    const first = await readChat(
      await stack.parley.fetch('/chat', asJson(key, { message: 'one' })),
    );
    expect(first.text).toBe('A short answer.');
    const second = await readChat(
      await stack.parley.fetch('/chat', asJson(key, { message: 'two' })),
    );
    expect(second.text).toBe('A short answer.'); // 50 of 100 used: still admitted
    const third = await stack.parley.fetch('/chat', asJson(key, { message: 'three' }));
    expect(third.status).toBe(429);
    expect((await json(third)).detail).toContain('100 model tokens');
    const retryAfter = Number(third.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(86_400);
    const usage = await json(await stack.parley.fetch('/users/token-user/usage', { token: key }));
    expect(usage.tokens_today).toBe(100);
  });

  it('limits the bytes ingested a day and the storage of private documents', async () => {
    const key = await createUser(stack.parley, 'ingest-user', {
      ingest_mb_per_day: 1,
      storage_mb: 0,
    });
    const upload = (name: string, bytes: number) =>
      uploadText(stack.parley, key, name, 'word '.repeat(Math.floor(bytes / 5)));
    expect((await upload('a.txt', 600_000)).status).toBe(200);
    const over = await upload('b.txt', 600_000);
    expect(over.status).toBe(429);
    expect((await json(over)).detail).toContain('1 MB');
    expect(Number(over.headers.get('retry-after'))).toBeGreaterThan(0);
    const usage = await json(await stack.parley.fetch('/users/ingest-user/usage', { token: key }));
    expect(usage.ingest_mb_today).toBeCloseTo(0.572, 2);
    expect(usage.storage_mb).toBeCloseTo(0.572, 2);

    const small = await createUser(stack.parley, 'storage-user', { storage_mb: 1 });
    const put = (name: string) => uploadText(stack.parley, small, name, 'text '.repeat(120_000));
    expect((await put('one.txt')).status).toBe(200);
    expect((await put('one.txt')).status).toBe(200); // replacing a source does not count it twice
    const full = await put('two.txt');
    expect(full.status).toBe(429);
    expect((await json(full)).detail).toContain('1 MB');
  });

  // Each file is 0.6 MB: one fits in 1 MB, two do not, however they arrive. Text in many
  // chunks is stored a batch at a time; a file of few words (here mostly spaces) in one step.
  it.each([
    ['many chunks', 'text '.repeat(120_000)],
    ['one chunk', `A few words. ${' '.repeat(600_000)}The end.`],
  ])(
    'holds the storage limit when a user uploads several documents of %s at once',
    async (kind, text) => {
      const user = `burst-storage-${kind.replace(' ', '-')}`;
      const key = await createUser(stack.parley, user, { storage_mb: 1 });
      const answers = await Promise.all(
        ['a.txt', 'b.txt', 'c.txt', 'd.txt'].map((name) =>
          uploadText(stack.parley, key, name, text),
        ),
      );
      const statuses = answers.map((answer) => answer.status).sort();
      expect(statuses).toEqual([200, 429, 429, 429]);
      const usage = await json(await stack.parley.fetch(`/users/${user}/usage`, { token: key }));
      expect(usage.storage_mb).toBeLessThanOrEqual(1);
    },
  );

  it('counts conversations, every version, in the storage limit; deleting them frees it', async () => {
    const key = await createUser(stack.parley, 'talker', { storage_mb: 1 });
    const long = 'x'.repeat(700_000);
    stack.llm.enqueue(reply.text(long), reply.text(long));
    const first = await readChat(await stack.parley.fetch('/chat', asJson(key, { message: 'a' })));
    expect(first.text).toBe(long);
    // Another version of the same turn counts too.
    const again = await stack.parley.fetch(
      '/chat',
      asJson(key, { message: 'a', regenerate: first.runId }),
    );
    expect((await readChat(again)).text).toBe(long);
    const usage = await json(await stack.parley.fetch('/users/talker/usage', { token: key }));
    expect(usage.storage_mb).toBeGreaterThan(1.3);

    const full = await stack.parley.fetch('/chat', asJson(key, { message: 'b' }));
    expect(full.status).toBe(429);
    expect((await json(full)).detail).toContain('conversations');
    expect(Number(full.headers.get('retry-after'))).toBeGreaterThan(0);

    const deleted = await stack.parley.fetch('/users/talker/conversations', {
      method: 'DELETE',
      token: key,
    });
    expect(deleted.status).toBe(200);
    const freed = await stack.parley.fetch('/chat', asJson(key, { message: 'c' }));
    expect(freed.status).toBe(200);
    await readChat(freed);
  });
});

describe('per-user limits across two replicas on one database', () => {
  let stack: ReplicaStack;

  beforeAll(async () => {
    stack = await startReplicas(2, { API_TOKEN: ADMIN, EMBEDDINGS_PROVIDER: 'none' });
    stack.llm.respond(() => reply.text('Hi.'));
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('admits exactly the limit when the chats are spread over both replicas', async () => {
    const [one, two] = stack.replicas as [RunningParley, RunningParley];
    const key = await createUser(one, 'spread', { chats_per_minute: 5 });
    const { streams, refused } = await chatAtOnce(
      Array.from(
        { length: 20 },
        (_, i) => () => (i % 2 ? one : two).fetch('/chat', asJson(key, { message: `hi ${i}` })),
      ),
    );
    expect(streams).toHaveLength(5);
    expect(refused.map((answer) => answer.status)).toEqual(Array(15).fill(429));
  });

  it('refuses a revoked key on every replica within a second', async () => {
    const [one, two] = stack.replicas as [RunningParley, RunningParley];
    await createUser(one, 'revokee');
    const extra = await json(await one.fetch('/admin/users/revokee/keys', asJson(ADMIN, {})));
    // Both replicas have seen the key (and may have cached it).
    expect((await one.fetch('/users/revokee/usage', { token: extra.key })).status).toBe(200);
    expect((await two.fetch('/users/revokee/usage', { token: extra.key })).status).toBe(200);
    const revoked = await one.fetch(
      `/admin/keys/${extra.key_id}`,
      asJson(ADMIN, undefined, 'DELETE'),
    );
    expect(await revoked.json()).toEqual({ revoked: extra.key_id });
    const at = Date.now();
    expect((await one.fetch('/users/revokee/usage', { token: extra.key })).status).toBe(401);
    let refusedAfter: number | undefined;
    while (Date.now() - at < 3_000) {
      const status = (await two.fetch('/users/revokee/usage', { token: extra.key })).status;
      if (status === 401) {
        refusedAfter = Date.now() - at;
        break;
      }
      expect(status).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(refusedAfter).toBeDefined();
    expect(refusedAfter).toBeLessThanOrEqual(1_000);
  });
});

describe.each(ENGINES)('LIMITS_APPLY_TO_ADMIN on the %s engine', (engine) => {
  let stack: Awaited<ReturnType<typeof startEngineStack>>;

  beforeAll(async () => {
    stack = await startEngineStack(engine, {
      API_TOKEN: ADMIN,
      EMBEDDINGS_PROVIDER: 'none',
      LIMITS_APPLY_TO_ADMIN: 'true',
      LIMIT_CHATS_PER_MINUTE: '2',
    });
    stack.llm.respond(() => reply.text('Hi.'));
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it("refuses the administrator's chats over the named user's limit, by default or override", async () => {
    const send = (userId: string) =>
      stack.parley.fetch('/chat', asJson(ADMIN, { message: 'hi', user_id: userId }));
    const { streams, refused } = await chatAtOnce([1, 2, 3].map(() => () => send('no-account')));
    expect(streams).toHaveLength(2);
    expect(refused.map((answer) => answer.status)).toEqual([429]);
    // Another user has limits of their own.
    expect((await send('someone-else')).status).toBe(200);
  });
});

describe.each(ENGINES)('an answer under way on the %s engine', (engine) => {
  let stack: Awaited<ReturnType<typeof startEngineStack>>;

  beforeAll(async () => {
    stack = await startEngineStack(engine, {
      API_TOKEN: ADMIN,
      EMBEDDINGS_PROVIDER: 'none',
      LIMIT_TOKENS_PER_DAY: '100',
      LIMIT_CHATS_PER_MINUTE: '0',
    });
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('is never cut by the token limit it passes; only the next chat is refused', async () => {
    const key = await createUser(stack.parley, 'long-answer'); // the default: 100 tokens a day
    // The answer takes two model calls: the first alone reports 7× the day's limit, so a
    // limit checked between the calls, or while the text streams, would cut this answer.
    stack.llm.enqueue(
      reply.toolCalls([{ name: 'list_reminders', args: {} }], {
        usage: { prompt: 400, completion: 300 },
      }),
      reply.text('The first part. The second part. The very end.', {
        chunks: 6,
        delayMs: 20,
        usage: { prompt: 500, completion: 200 },
      }),
    );
    const answered = await stack.parley.fetch('/chat', asJson(key, { message: 'tell me' }));
    expect(answered.status).toBe(200);
    const stream = await readChat(answered);
    expect(stream.error).toBeUndefined();
    expect(stream.text).toBe('The first part. The second part. The very end.');
    expect(stream.runId).toEqual(expect.any(String)); // the done event
    expect(stream.ended).toBe(true);
    expect(stack.llm.chats).toHaveLength(2);

    const usage = await json(await stack.parley.fetch('/users/long-answer/usage', { token: key }));
    expect(usage.tokens_today).toBe(1_400);
    expect(usage.limits.tokens_per_day).toBe(100);

    const next = await stack.parley.fetch('/chat', asJson(key, { message: 'and now?' }));
    expect(next.status).toBe(429);
    expect(next.headers.get('content-type')).toContain('application/json');
    expect((await json(next)).detail).toContain('100 model tokens');
    const retryAfter = Number(next.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(86_400);
    expect(stack.llm.chats).toHaveLength(2); // the refused chat never reached the model
  });
});
