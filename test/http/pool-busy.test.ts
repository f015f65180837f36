import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parseChatStream, readChat } from '../support/chat-stream.ts';
import { type EngineSetup, engineSetup } from '../support/engine-setup.ts';
import { ENGINES, type Engine } from '../support/engines.ts';
import { reply } from '../support/fake-llm-server.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';
import { lockMessages, waitForLockWaiter } from '../support/table-lock.ts';

/**
 * A query that cannot get a pooled connection within DB_POOL_WAIT_MS means Parley is busy, not
 * that the database is down: the client is told to try again (503 `busy`, Retry-After), the log
 * names the pool, and /health stays 200, since taking a busy replica out of rotation helps no one.
 */
const BUSY = { detail: 'Parley is busy; try again in a few seconds.', code: 'busy' };

const json = (body: unknown): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
});

describe.each(ENGINES)(
  'a request that waits too long for a connection on the %s engine',
  (engine: Engine) => {
    let setup: EngineSetup;
    let parley: RunningParley;
    beforeAll(async () => {
      // The embedded engine's pool always has one connection; a server's is made as small.
      setup = await engineSetup(engine, {
        DB_POOL_MAX: '1',
        DB_POOL_WAIT_MS: engine === 'server' ? '1000' : '100',
      });
      parley = await startParley({ env: setup.env, dataDir: setup.dataDir });
    });
    afterAll(async () => {
      await parley?.stop();
      await setup?.cleanup();
    });

    it('gets 503 busy with Retry-After, and Parley serves normally once the pressure is gone', async () => {
      let busy: Response | undefined;
      if (engine === 'server') {
        const databaseUrl = setup.env.DATABASE_URL as string;
        const release = await lockMessages(databaseUrl);
        setup.llm.enqueue(reply.text('waited answer'));
        const waiting = parley.fetch('/chat', json({ message: 'hello', user_id: 'holder' }));
        await waitForLockWaiter(databaseUrl);
        busy = await parley.fetch('/documents');
        // Busy is not down: a load balancer must keep this replica.
        const health = await parley.fetch('/health');
        expect(health.status).toBe(200);
        expect(await health.json()).toMatchObject({ status: 'ok', database: 'busy' });
        // The OpenAI-compatible door says the same in OpenAI's shape.
        const completion = await parley.fetch(
          '/v1/chat/completions',
          json({ model: 'parley', messages: [{ role: 'user', content: 'hi' }], user: 'other' }),
        );
        expect(completion.status).toBe(503);
        expect(completion.headers.get('retry-after')).toBe('5');
        expect(await completion.json()).toEqual({
          error: { message: BUSY.detail, type: 'server_error', param: null, code: 'busy' },
        });
        await release();
        // The chat that held the connection is answered as if nothing happened.
        const held = await readChat(await waiting);
        expect(held.error).toBeUndefined();
        expect(held.text).toBe('waited answer');
      } else {
        // Nothing outside Parley can reach the embedded engine: a burst of requests on its one
        // connection makes some wait longer than the 100 ms allowed.
        for (let round = 0; round < 10 && !busy; round++) {
          const answering = Promise.all(
            Array.from({ length: 200 }, () => parley.fetch('/documents')),
          );
          // Busy is not down here either: /health, asked amid the burst, keeps the replica.
          const health = await parley.fetch('/health');
          expect(health.status).toBe(200);
          expect(((await health.json()) as { database: string }).database).toMatch(/^(ok|busy)$/);
          const answers = await answering;
          for (const answer of answers) {
            if (answer.status === 200) await answer.body?.cancel();
            else if (!busy) busy = answer;
            else expect(await answer.json()).toEqual(BUSY);
          }
        }
      }
      if (!busy) throw new Error('no request had to wait long enough');
      expect(busy.status).toBe(503);
      expect(busy.headers.get('retry-after')).toBe('5');
      expect(await busy.json()).toEqual(BUSY);
      const line = await parley.waitForLog((l) => l.cause === 'pool_wait_timeout');
      expect(line).toMatchObject({
        code: 'busy',
        pool_size: 1,
        wait_ms: engine === 'server' ? 1000 : 100,
        waiting: expect.any(Number),
      });

      // The pressure is gone: everything is served again.
      expect((await parley.fetch('/documents')).status).toBe(200);
      const health = await parley.fetch('/health');
      expect(health.status).toBe(200);
      expect(await health.json()).toMatchObject({ status: 'ok', database: 'ok' });
    }, 60_000);
  },
);

// Only a PostgreSQL server can be held from outside (a lock) at the moment a started answer
// needs the database again; on the embedded engine that moment cannot be chosen.
describe('an answer whose stream started, on the server engine', () => {
  let setup: EngineSetup;
  let parley: RunningParley;
  let release: (() => Promise<void>) | undefined;
  beforeAll(async () => {
    // A turn left with the database busy must not wait for this to pass (see below).
    setup = await engineSetup('server', {
      DB_POOL_MAX: '1',
      DB_POOL_WAIT_MS: '1000',
      CHAT_TURN_TTL_SECONDS: '300',
    });
    parley = await startParley({ env: setup.env, dataDir: setup.dataDir });
  });
  afterEach(async () => {
    await release?.();
    release = undefined;
  });
  afterAll(async () => {
    await parley?.stop();
    await setup?.cleanup();
  });

  /**
   * Starts an answer (its model reply held), lets another chat take the only connection and
   * wait on the history table, then lets the answer finish: storing it cannot get a connection.
   * Resolves with the answer's whole stream, once the other chat was answered.
   */
  async function answerWhileBusy(start: () => Promise<Response>, holder: string) {
    const databaseUrl = setup.env.DATABASE_URL as string;
    let letAnswer: () => void = () => {};
    const answering = new Promise<void>((resolve) => {
      letAnswer = resolve;
    });
    const chats = setup.llm.chats.length;
    setup.llm.enqueue(reply.text('late answer', { pace: () => answering }));
    const started = start();
    await expect.poll(() => setup.llm.chats.length, { timeout: 10_000 }).toBe(chats + 1);

    const unlock = await lockMessages(databaseUrl);
    release = unlock;
    setup.llm.enqueue(reply.text('held answer'));
    const holding = parley.fetch('/chat', json({ message: 'hold', user_id: holder }));
    await waitForLockWaiter(databaseUrl);

    letAnswer();
    const raw = await (await started).text();
    release = undefined;
    await unlock();
    // The chat that held the connection is answered as if nothing happened.
    expect((await readChat(await holding)).text).toBe('held answer');
    return raw;
  }

  it('/chat ends with a busy error event when storing the answer cannot get a connection', async () => {
    const raw = await answerWhileBusy(
      () => parley.fetch('/chat', json({ message: 'first', user_id: 'streamer' })),
      'holder-1',
    );
    const stream = parseChatStream(raw);
    expect(stream.error).toEqual({ code: 'busy', message: BUSY.detail });
    expect(stream.ended).toBe(true);
  }, 60_000);

  it("gives the user's turn back once the pressure is gone, not when the turn expires", async () => {
    await answerWhileBusy(
      () => parley.fetch('/chat', json({ message: 'first', user_id: 'returning' })),
      'holder-3',
    );
    // Giving the turn back failed with the pool busy too; the next chat must not wait the
    // 300 s of CHAT_TURN_TTL_SECONDS for it.
    setup.llm.enqueue(reply.text('second answer'));
    const again = await parley.fetch('/chat', {
      ...json({ message: 'again', user_id: 'returning' }),
      signal: AbortSignal.timeout(20_000),
    });
    expect((await readChat(again)).text).toBe('second answer');
  }, 60_000);

  it('a streamed completion ends with an OpenAI error chunk of code busy', async () => {
    const raw = await answerWhileBusy(
      () =>
        parley.fetch(
          '/v1/chat/completions',
          json({
            model: 'parley',
            stream: true,
            user: 'v1-streamer',
            messages: [{ role: 'user', content: 'first' }],
          }),
        ),
      'holder-2',
    );
    const error = raw
      .split('\n\n')
      .filter((event) => event.startsWith('data: {"error"'))
      .map((event) => JSON.parse(event.slice('data: '.length)));
    expect(error).toEqual([
      { error: { message: BUSY.detail, type: 'server_error', param: null, code: 'busy' } },
    ]);
    expect(raw.trimEnd().endsWith('data: [DONE]')).toBe(true);
  }, 60_000);
});
