import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, vi } from 'vitest';
import { readChat } from './chat-stream.ts';
import { type Engine, type EngineEnv, engineEnv } from './engines.ts';
import { type FakeLlmServer, reply, startFakeLlmServer } from './fake-llm-server.ts';
import { type FakeTelegramServer, startFakeTelegramServer } from './fake-telegram-server.ts';
import { startParleyProcesses } from './parley-processes.ts';
import type { RunningParley } from './start-parley.ts';

export interface ReminderView {
  id: string;
  title: string;
  date: string;
  time?: string;
  timezone: string;
  note?: string;
  notices_sent: string[];
  notices: { notice: string; status: string; sent_at?: string; error?: string }[];
}

/**
 * Parley with a fake model, a fake Telegram and a test clock (PARLEY_TEST_CLOCK_FILE), ticking
 * every second, on one engine. `tickAt` moves time and waits for the first whole tick that saw
 * it, so tests step through days without sleeping through them.
 */
export interface ReminderStack {
  llm: FakeLlmServer;
  telegram: FakeTelegramServer;
  parley: RunningParley;
  storage: EngineEnv;
  dataDir: string;
  env: Record<string, string>;
  /** Sets the clock to `iso` and waits until a tick that read it has finished. */
  tickAt(iso: string): Promise<void>;
  setClock(iso: string): void;
  /** Sets a reminder the way a user does: asking the (fake) model, which calls set_reminder. */
  setReminder(userId: string, args: Record<string, unknown>): Promise<ReminderView>;
  reminders(userId: string): Promise<ReminderView[]>;
  putProfile(userId: string, body: Record<string, unknown>): Promise<Response>;
  /**
   * Stops Parley (SIGTERM, or SIGKILL for a crash) and starts it again on the same data, after
   * `whileStopped` if given.
   */
  restart(signal?: NodeJS.Signals, whileStopped?: () => Promise<void>): Promise<number | null>;
  startAnother(): Promise<RunningParley>;
  stop(): Promise<void>;
}

export const TOKEN = 'reminder-test-token';

/**
 * The stack of the describe block this is called in: started before its tests (a start takes
 * up to three minutes on a busy machine), its fakes checked for requests nobody scripted after
 * each test, stopped after the last. Returns the running stack (a new Parley after a restart).
 */
export function useReminderStack(
  engine: Engine,
  options: { start: string; env?: Record<string, string> },
): () => ReminderStack {
  let stack: ReminderStack | undefined;
  vi.setConfig({ testTimeout: 180_000 });
  beforeAll(async () => {
    stack = await startReminderStack(engine, options);
  }, 180_000);
  afterEach(() => {
    stack?.telegram.assertNoUnexpected();
    stack?.llm.assertNoUnexpected();
  });
  afterAll(async () => {
    await stack?.stop();
  });
  return () => {
    if (!stack) throw new Error('the reminder stack did not start');
    return stack;
  };
}

export async function startReminderStack(
  engine: Engine,
  options: { start: string; env?: Record<string, string> },
): Promise<ReminderStack> {
  const llm = await startFakeLlmServer();
  const telegram = await startFakeTelegramServer();
  const storage = await engineEnv(engine);
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-reminders-'));
  const clockFile = join(dataDir, 'test-clock');
  const setClock = (iso: string) => {
    writeFileSync(`${clockFile}.tmp`, iso);
    renameSync(`${clockFile}.tmp`, clockFile); // never a half-written file
  };
  setClock(options.start);
  const env = {
    API_TOKEN: TOKEN,
    LOG_LEVEL: 'debug',
    LLM_BASE_URL: llm.url,
    LLM_MODEL: 'fake-chat',
    LLM_MAX_RETRIES: '0',
    TELEGRAM_BOT_TOKEN: telegram.token,
    TELEGRAM_API_BASE: telegram.url,
    PARLEY_TEST_CLOCK_FILE: clockFile,
    REMINDER_INTERVAL_SECONDS: '1',
    ...storage.env,
    ...options.env,
  };
  const processes = await startParleyProcesses({ dataDir, env, otherDirPrefix: 'parley-2-' });
  const parley = () => processes.parley;

  const stack: ReminderStack = {
    llm,
    telegram,
    get parley() {
      return parley();
    },
    storage,
    dataDir,
    env,
    setClock,
    async tickAt(iso) {
      const watched = [parley(), ...processes.others];
      const marks = watched.map((p) => p.logs.length);
      setClock(iso);
      const logged = new Date(iso).toISOString();
      const deadline = Date.now() + 30_000;
      const ticked = () =>
        watched.every((p, i) =>
          p.logs.slice(marks[i]).some((l) => l.msg === 'reminder tick' && l.now === logged),
        );
      while (!ticked()) {
        if (Date.now() > deadline) throw new Error(`no reminder tick at ${iso}`);
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    },
    async setReminder(userId, args) {
      llm.enqueue(reply.toolCalls([{ name: 'set_reminder', args }]), reply.text('Saved.'));
      const stream = await readChat(
        await parley().fetch('/chat', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ message: 'remind me, please', user_id: userId }),
        }),
      );
      if (stream.text !== 'Saved.' || stream.error) {
        throw new Error(`chat did not save the reminder: ${stream.raw}`);
      }
      const all = await stack.reminders(userId);
      const made = all.find((r) => r.title === args.title && r.date === args.date);
      if (!made) throw new Error(`reminder not stored: ${JSON.stringify(all)}`);
      return made;
    },
    async reminders(userId) {
      const response = await parley().fetch(`/reminders/${encodeURIComponent(userId)}`);
      if (response.status !== 200) throw new Error(`GET /reminders: ${response.status}`);
      return ((await response.json()) as { reminders: ReminderView[] }).reminders;
    },
    putProfile: (userId, body) =>
      parley().fetch(`/users/${encodeURIComponent(userId)}/profile`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      }),
    restart: (signal, whileStopped) => processes.restart(signal, whileStopped),
    startAnother: () => processes.startAnother(),
    async stop() {
      await processes.stop();
      await llm.close();
      await telegram.close();
      await storage.cleanup();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return stack;
}
