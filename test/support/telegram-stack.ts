import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Engine, type EngineEnv, engineEnv } from './engines.ts';
import { type FakeLangSmithServer, startFakeLangSmithServer } from './fake-langsmith-server.ts';
import { type FakeLlmServer, startFakeLlmServer } from './fake-llm-server.ts';
import {
  type FakeTelegramServer,
  type SentMessage,
  startFakeTelegramServer,
} from './fake-telegram-server.ts';
import { startParleyProcesses } from './parley-processes.ts';
import type { RunningParley } from './start-parley.ts';

export const TOKEN = 'telegram-test-token';

/**
 * Parley with a fake model (chat and vision), a fake Telegram Bot API and a fake LangSmith,
 * reading the bot's updates by long polling, on one engine.
 */
export interface TelegramStack {
  llm: FakeLlmServer;
  vision: FakeLlmServer;
  telegram: FakeTelegramServer;
  langsmith: FakeLangSmithServer;
  parley: RunningParley;
  storage: EngineEnv;
  env: Record<string, string>;
  /** Creates the user (with a key, returned) and links `chatId` with a one-time code. */
  link(userId: string, chatId: number): Promise<string>;
  /** Messages the bot sent to a chat after the first `from`. */
  sentSince(chatId: number, from: number): SentMessage[];
  /** The user writes; resolves with the bot's answer (its messages, the last with buttons). */
  ask(chatId: number, text: string): Promise<SentMessage[]>;
  /** Waits until the bot sent a chat a message with buttons (an answer) after `from`. */
  answerAfter(chatId: number, from: number, timeoutMs?: number): Promise<SentMessage[]>;
  restart(signal?: NodeJS.Signals): Promise<void>;
  /** Another replica on the same database (server engine only), with its own data dir. */
  startAnother(): Promise<RunningParley>;
  stop(): Promise<void>;
}

export interface TelegramStackOptions {
  /** Sets the fake Bot API up before Parley starts (e.g. a webhook left from earlier). */
  beforeStart?(telegram: FakeTelegramServer): void | Promise<void>;
}

export async function startTelegramStack(
  engine: Engine,
  extraEnv: Record<string, string> = {},
  options: TelegramStackOptions = {},
): Promise<TelegramStack> {
  const llm = await startFakeLlmServer();
  const vision = await startFakeLlmServer({ models: ['fake-vision'] });
  const telegram = await startFakeTelegramServer();
  await options.beforeStart?.(telegram);
  const langsmith = await startFakeLangSmithServer({ apiKey: 'ls-test-key' });
  const storage = await engineEnv(engine);
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-telegram-'));
  const env: Record<string, string> = {
    API_TOKEN: TOKEN,
    LOG_LEVEL: 'debug',
    LLM_BASE_URL: llm.url,
    LLM_MODEL: 'fake-chat',
    LLM_MAX_RETRIES: '0',
    VISION_ENABLED: 'true',
    VISION_MODEL_ID: 'fake-vision',
    VISION_BASE_URL: vision.url,
    TELEGRAM_BOT_TOKEN: telegram.token,
    TELEGRAM_API_BASE: telegram.url,
    TELEGRAM_POLLING: 'true',
    TELEGRAM_POLL_TIMEOUT_SECONDS: '5',
    LANGSMITH_API_KEY: 'ls-test-key',
    LANGSMITH_ENDPOINT: langsmith.url,
    LANGSMITH_PROJECT: 'parley-telegram-tests',
    FEEDBACK_RETRY_MS: '200',
    ...storage.env,
    ...extraEnv,
  };
  const processes = await startParleyProcesses({
    dataDir,
    env,
    otherDirPrefix: 'parley-telegram-2-',
    startTimeoutMs: 180_000,
  });
  const parley = () => processes.parley;

  const answers = (chatId: number, from: number) => telegram.sentTo(String(chatId)).slice(from);
  const stack: TelegramStack = {
    llm,
    vision,
    telegram,
    langsmith,
    get parley() {
      return parley();
    },
    storage,
    env,
    async link(userId, chatId) {
      const created = await parley().fetch('/admin/users', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ user_id: userId }),
      });
      if (created.status !== 201) throw new Error(`POST /admin/users: ${created.status}`);
      const { key } = (await created.json()) as { key: string };
      const issued = await parley().fetch(`/users/${userId}/telegram-link`, { method: 'POST' });
      const { code } = (await issued.json()) as { code: string };
      const from = telegram.sentTo(String(chatId)).length;
      telegram.pushMessage(chatId, `/start ${code}`);
      await telegram.waitFor(() => answers(chatId, from).length > 0);
      const reply = answers(chatId, from)[0]?.visible ?? '';
      if (!reply.startsWith('Linked.')) throw new Error(`not linked: ${reply}`);
      return key;
    },
    sentSince: answers,
    async answerAfter(chatId, from, timeoutMs = 60_000) {
      await telegram.waitFor(
        () => answers(chatId, from).some((m) => m.replyMarkup !== undefined),
        timeoutMs,
      );
      return answers(chatId, from);
    },
    async ask(chatId, text) {
      const from = telegram.sentTo(String(chatId)).length;
      telegram.pushMessage(chatId, text);
      return stack.answerAfter(chatId, from);
    },
    async restart(signal) {
      await processes.restart(signal);
    },
    startAnother: () => processes.startAnother(),
    async stop() {
      await processes.stop();
      await llm.close();
      await vision.close();
      await telegram.close();
      await langsmith.close();
      await storage.cleanup();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return stack;
}
