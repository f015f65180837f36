import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.ts';
import { openDatabase } from '../../src/storage/database.ts';
import { readChat } from '../support/chat-stream.ts';
import { engineSetup } from '../support/engine-setup.ts';
import { ENGINES } from '../support/engines.ts';
import { reply } from '../support/fake-llm-server.ts';
import { startParley } from '../support/start-parley.ts';

/**
 * A profile timezone written before timezones had to be names: an offset such as `-0330`
 * passed the runtime's check, and PostgreSQL, where "today" is counted for the limits,
 * refuses it (or reads `+05:00` five hours the other way). The user's chats and usage must
 * not fail on it: today is then counted in the server's default timezone, while the prompt's
 * local time (read by the runtime, which reads offsets right) keeps it.
 */
describe.each(ENGINES)('a stored offset timezone on the %s engine', (engine) => {
  const cleanups: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  it("neither the user's chats nor their usage fail on it", async () => {
    const { llm, dataDir, env, cleanup } = await engineSetup(engine, {
      // A daily token limit: every chat counts today's tokens in the user's timezone.
      LIMIT_TOKENS_PER_DAY: '100000',
      LIMITS_APPLY_TO_ADMIN: 'true',
    });
    cleanups.push(cleanup);
    // As a database of an earlier version holds it.
    const database = await openDatabase(
      parseConfig({ ...env, DATA_DIR: dataDir }),
      pino({ level: 'silent' }),
    );
    await database.db.$client.query(
      `INSERT INTO users (user_id, timezone) VALUES ('drifter', '-0330'), ('eastward', '+05:00')`,
    );
    await database.close();

    const parley = await startParley({ dataDir, env });
    cleanups.push(async () => void (await parley.stop()));
    llm.respond(() => reply.text('Noted.'));
    for (const user of ['drifter', 'eastward']) {
      const response = await parley.fetch('/chat', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ user_id: user, message: 'hello' }),
      });
      expect(response.status, user).toBe(200);
      expect((await readChat(response)).text).toBe('Noted.');
      const usage = await parley.fetch(`/users/${user}/usage`);
      expect(usage.status, user).toBe(200);
    }
    // The prompt's local time still reads the stored offset (the runtime reads it the right
    // way round): the time the user gave is not dropped for UTC.
    const systemOf = (index: number) =>
      JSON.stringify(llm.chats[index]?.body.messages.find((m) => m.role === 'system'));
    expect(systemOf(0)).toContain('(-0330)');
    expect(systemOf(1)).toContain('(+05:00)');
  });
});
