/**
 * Time from a Telegram message to the first text of its answer (draft, or the message), with every outside party
 * answering at once: Parley (a child process, as `npm start` runs it) long-polls the fake Bot
 * API of the tests, and the fake model streams its answer with no delay. The figure is
 * Parley's share: take the update, claim it in the database, find the chat's user, admit the
 * chat against the limits, load the history, call the model, send the draft.
 *
 * Measured two ways: Parley's own `firstUpdateMs` (from taking the update to the draft being
 * accepted) and the fake's clock (from getUpdates handing the message out to the draft
 * arriving; includes the long poll's answer crossing the loopback).
 *
 *   node bench/telegram-first-draft.ts [engine=embedded|server] [messages=30]
 */
import { engineEnv } from '../test/support/engines.ts';
import { reply, startFakeLlmServer } from '../test/support/fake-llm-server.ts';
import { startFakeTelegramServer } from '../test/support/fake-telegram-server.ts';
import { startParley } from '../test/support/start-parley.ts';
import { load, machineReport } from './support/machine.ts';
import { line, summarize } from './support/stats.ts';

const engine = (process.argv[2] ?? 'embedded') as 'embedded' | 'server';
const MESSAGES = Number(process.argv[3] ?? 30);

console.log(machineReport());
console.log(`engine: ${engine}, messages: ${MESSAGES}, load before: ${load()}`);
const llm = await startFakeLlmServer();
const telegram = await startFakeTelegramServer();
const storage = await engineEnv(engine);
const parley = await startParley({
  env: {
    API_TOKEN: 'bench-token',
    LLM_BASE_URL: llm.url,
    LLM_MAX_RETRIES: '0',
    TELEGRAM_BOT_TOKEN: telegram.token,
    TELEGRAM_API_BASE: telegram.url,
    TELEGRAM_POLLING: 'true',
    ...storage.env,
  },
  token: 'bench-token',
  startTimeoutMs: 180_000,
});
try {
  await parley.fetch('/admin/users', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ user_id: 'bench' }),
  });
  // No per-minute chat limit for the bench user.
  await parley.fetch('/admin/users/bench', {
    method: 'PATCH',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ limits: { chats_per_minute: 0, tokens_per_day: 0 } }),
  });
  const { code } = (await (
    await parley.fetch('/users/bench/telegram-link', { method: 'POST' })
  ).json()) as { code: string };
  telegram.pushMessage(7, `/start ${code}`);
  await telegram.waitFor(() => telegram.sentTo('7').length === 1);

  const parleySide: number[] = [];
  const fakeSide: number[] = [];
  let drafted = 0;
  for (let i = 0; i < MESSAGES; i++) {
    llm.enqueue(reply.text(`Answer number ${i}, quickly.`));
    const sentBefore = telegram.sentTo('7').length;
    const callsBefore = telegram.calls.length;
    const logsBefore = parley.logs.length;
    const pushedAt = Date.now();
    telegram.pushMessage(7, `question ${i}`);
    await telegram.waitFor(() => telegram.sentTo('7').length > sentBefore);
    // A model this fast may finish before the first draft is due: then the message is first.
    const first = telegram.calls
      .slice(callsBefore)
      .find((c) => c.method === 'sendMessageDraft' || c.method === 'sendMessage');
    if (first) fakeSide.push(first.at - pushedAt);
    if (first?.method === 'sendMessageDraft') drafted++;
    const logged = await parley.waitForLog(
      (l) => l.msg === 'Telegram answer sent' && parley.logs.indexOf(l) >= logsBefore,
    );
    if (typeof logged.firstUpdateMs === 'number') parleySide.push(logged.firstUpdateMs);
  }
  console.log(
    `\nfirst draft or message, Parley's clock (update taken → accepted): ${line(summarize(parleySide))}`,
  );
  console.log(
    `first draft or message, fake's clock (message pushed → received): ${line(summarize(fakeSide))}`,
  );
  console.log(
    `answers whose first text was a draft (not the final message): ${drafted}/${MESSAGES}`,
  );
  console.log(`load after: ${load()}`);
} finally {
  await parley.stop();
  await llm.close();
  await telegram.close();
  await storage.cleanup();
}
