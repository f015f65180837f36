import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { ENGINES } from '../support/engines.ts';
import { reply } from '../support/fake-llm-server.ts';
import type { RunningParley } from '../support/start-parley.ts';
import { startTelegramStack, type TelegramStack } from '../support/telegram-stack.ts';

const START_TIMEOUT_MS = 200_000;

describe.each(ENGINES)('Telegram updates once, on the %s engine', (engine) => {
  vi.setConfig({ testTimeout: START_TIMEOUT_MS * 2 });
  let stack: TelegramStack | undefined;
  let balancer: Server | undefined;
  afterEach(async () => {
    stack?.telegram.assertNoUnexpected();
    stack?.llm.assertNoUnexpected();
    await stack?.stop();
    stack = undefined;
    await new Promise((resolve) => (balancer ? balancer.close(resolve) : resolve(undefined)));
    balancer = undefined;
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('the poller survives restarts (clean and killed) without repeating an update', async () => {
    // A short poll wait: a killed poller's lease lasts it plus 30 s (pollLeaseMs).
    stack = await startTelegramStack(engine, { TELEGRAM_POLL_TIMEOUT_SECONDS: '1' });
    const s = stack;
    await s.link('lee', 801);
    s.llm.enqueue(reply.text('First answer.'));
    const firstId = s.telegram.pushMessage(801, 'first');
    await s.answerAfter(801, 1);
    // Another poll starts only once a killed poller's lease has run out: once is enough.
    const signals =
      engine === 'embedded' ? (['SIGTERM', 'SIGKILL'] as const) : (['SIGTERM'] as const);
    for (const signal of signals) {
      // The last answer is noted as sent: a process killed between Telegram taking a final
      // message and that note sends it again after restart (killed-before-final.test.ts).
      await s.parley.waitForLog((l) => l.msg === 'Telegram answer sent');
      await s.restart(signal);
      // As if Telegram handed out again everything since the first message.
      s.telegram.redeliverFrom(firstId);
      s.llm.enqueue(reply.text(`After ${signal}.`));
      const from = s.telegram.sentTo('801').length;
      s.telegram.pushMessage(801, `after ${signal}`);
      // After SIGKILL the dead poller's lease (31 s) must run out first.
      const answer = await s.answerAfter(801, from, 120_000);
      expect(answer.at(-1)?.visible).toBe(`After ${signal}.`);
      await s.parley.waitForLog((l) => l.msg === 'Telegram update already taken: skipped');
    }
    await s.parley.settled(500);
    const answers = s.telegram.sentTo('801').filter((m) => m.replyMarkup !== undefined);
    expect(answers.map((m) => m.visible)).toEqual([
      'First answer.',
      ...signals.map((signal) => `After ${signal}.`),
    ]);
    expect(s.llm.pendingReplies).toBe(0);
    expect(s.llm.chats).toHaveLength(1 + signals.length);
  });

  it('polls although a webhook was left set for the bot, keeping what it had not delivered', async () => {
    // The webhook of an earlier deployment, which no longer takes anything.
    balancer = createServer((_req, res) => res.writeHead(502).end());
    await new Promise<void>((resolve) => balancer?.listen(0, '127.0.0.1', resolve));
    const port = (balancer.address() as AddressInfo).port;
    stack = await startTelegramStack(
      engine,
      {},
      {
        beforeStart(telegram) {
          telegram.webhook = { url: `http://127.0.0.1:${port}/telegram/webhook`, secret: 'old' };
          telegram.pushMessage(811, 'hello from before');
        },
      },
    );
    const s = stack;
    // The fake answers getUpdates 409 (and records it as unexpected) while a webhook is set.
    await s.telegram.waitFor(() => s.telegram.sentTo('811').length === 1);
    expect(s.telegram.sentTo('811')[0]?.visible).toContain('/start <code>');
    expect(s.telegram.webhook).toBeUndefined();
    expect(s.telegram.callsOf('deleteWebhook').map((c) => c.body)).toEqual([
      { drop_pending_updates: false },
    ]);
    const firstPoll = s.telegram.callsOf('getUpdates')[0];
    expect(firstPoll?.at).toBeGreaterThanOrEqual(s.telegram.callsOf('deleteWebhook')[0]?.at ?? 0);
    expect(firstPoll?.status).toBe(200);
    // And it goes on polling.
    await s.link('wes', 812);
    s.llm.enqueue(reply.text('Polled.'));
    expect((await s.ask(812, 'still polling?')).at(-1)?.visible).toBe('Polled.');
  });

  it('takes webhook updates only with the secret, each once, on every replica', async () => {
    // A round-robin load balancer in front of the replicas, as Telegram's webhook URL.
    const replicas: RunningParley[] = [];
    let next = 0;
    balancer = createServer(async (req, res) => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const target = replicas[next++ % replicas.length];
      const answer = await fetch(`${target?.url}${req.url}`, {
        method: req.method,
        headers: req.headers as Record<string, string>,
        body: Buffer.concat(chunks),
      });
      res.writeHead(answer.status, { 'content-type': 'application/json' });
      res.end(Buffer.from(await answer.arrayBuffer()));
    });
    await new Promise<void>((resolve) => balancer?.listen(0, '127.0.0.1', resolve));
    const port = (balancer.address() as AddressInfo).port;
    stack = await startTelegramStack(engine, {
      TELEGRAM_POLLING: 'false',
      TELEGRAM_WEBHOOK_URL: `http://127.0.0.1:${port}/telegram/webhook`,
    });
    const s = stack;
    replicas.push(s.parley);
    // The embedded engine is one process; replicas share a PostgreSQL server.
    if (engine === 'server') replicas.push(await s.startAnother());
    await s.telegram.waitFor(() => s.telegram.webhook !== undefined);
    expect(s.telegram.webhook?.secret).toMatch(/^[A-Za-z0-9_-]{32,}$/);
    expect(s.telegram.callsOf('getUpdates')).toHaveLength(0);

    // Telegram posts it with the secret: an unlinked chat is told how to link.
    const update = s.telegram.pushMessage(901, 'hello');
    await s.telegram.waitFor(() => s.telegram.sentTo('901').length === 1);
    expect(await s.telegram.deliver(update, { secret: null })).toBe(401);
    expect(await s.telegram.deliver(update, { secret: 'wrong' })).toBe(401);
    expect(await s.telegram.deliver(update)).toBe(200); // taken already: no second hint

    await s.link('mia', 902); // the link code itself arrives through the webhook
    s.llm.enqueue(reply.text('Once.'), reply.text('Twice.'));
    for (const text of ['one', 'two']) {
      const id = s.telegram.pushMessage(902, text);
      // Telegram retries a delivery it thinks failed: every replica gets it again.
      for (let i = 0; i < replicas.length; i++) expect(await s.telegram.deliver(id)).toBe(200);
    }
    await s.telegram.waitFor(
      () => s.telegram.sentTo('902').filter((m) => m.replyMarkup !== undefined).length === 2,
    );
    for (const replica of replicas) await replica.settled(500);
    expect(s.telegram.sentTo('901')).toHaveLength(1);
    expect(
      s.telegram
        .sentTo('902')
        .filter((m) => m.replyMarkup !== undefined)
        .map((m) => m.visible),
    ).toEqual(['Once.', 'Twice.']);
    expect(s.llm.chats).toHaveLength(2);

    // Guessing the secret is throttled like a token (per replica: round robin spreads them).
    const statuses: number[] = [];
    for (let i = 0; i < 10 * replicas.length + 2 && !statuses.includes(429); i++) {
      statuses.push(await s.telegram.deliver(update, { secret: `wrong-${i}` }));
    }
    expect(statuses.at(-1)).toBe(429);
    expect(new Set(statuses.slice(0, -1))).toEqual(new Set([401]));
  });
});
