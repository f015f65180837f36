import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig, readEnvironment } from '../src/config.ts';

describe('configuration', () => {
  it('has the documented defaults', () => {
    const config = parseConfig({});
    expect(config).toMatchObject({
      PORT: 8000,
      HOST: '127.0.0.1',
      DATA_DIR: './data',
      LOG_LEVEL: 'info',
      GRAPH_ENABLED: false,
      MESSAGE_MAX_CHARS: 16_000,
    });
    expect(config.DATABASE_URL).toBeUndefined();
    expect(config.API_TOKEN).toBeUndefined();
    expect(Object.isFrozen(config)).toBe(true);
  });

  it.each([
    ['true', true],
    ['TRUE', true],
    ['1', true],
    ['yes', true],
    [' Yes ', true],
    ['false', false],
    ['0', false],
    ['no', false],
    ['', false],
  ])('reads %j as %s', (word, value) => {
    expect(parseConfig({ CRAG_ENABLED: word }).CRAG_ENABLED).toBe(value);
  });

  it('treats an empty API_TOKEN as unset (development mode)', () => {
    expect(parseConfig({ API_TOKEN: '' }).API_TOKEN).toBeUndefined();
  });

  it('names every bad variable in one error', () => {
    expect(() =>
      parseConfig({ PORT: '70000', VISION_ENABLED: 'sure', INGEST_MAX_BYTES: '-1' }),
    ).toThrow(ConfigError);
    try {
      parseConfig({ PORT: '70000', VISION_ENABLED: 'sure', INGEST_MAX_BYTES: '-1' });
    } catch (error) {
      const message = (error as Error).message;
      expect(message).toContain('PORT: accepts a whole number from 0 to 65535 (got "70000")');
      expect(message).toContain(
        'VISION_ENABLED: accepts true, false, 1, 0, yes or no (got "sure")',
      );
      expect(message).toContain('INGEST_MAX_BYTES: accepts a whole number');
    }
  });

  it('reads a .env file, with the environment taking precedence', () => {
    const dir = mkdtempSync(join(tmpdir(), 'parley-env-'));
    writeFileSync(join(dir, '.env'), 'PORT=9001\nGRAPH_ENABLED=yes\n');
    const config = parseConfig(readEnvironment({ GRAPH_ENABLED: 'no' }, dir));
    expect(config.PORT).toBe(9001);
    expect(config.GRAPH_ENABLED).toBe(false);
  });
});

describe('reminder and Telegram settings', () => {
  it('default to UTC, a 60 s tick, the official Bot API, no polling', () => {
    expect(parseConfig({})).toMatchObject({
      DEFAULT_TIMEZONE: 'UTC',
      REMINDER_INTERVAL_SECONDS: 60,
      TELEGRAM_API_BASE: 'https://api.telegram.org',
      TELEGRAM_POLLING: false,
    });
  });

  it('refuses an unknown timezone, a zero interval and an API base that is not http(s)', () => {
    try {
      parseConfig({
        DEFAULT_TIMEZONE: 'Mars/Olympus',
        REMINDER_INTERVAL_SECONDS: '0',
        TELEGRAM_API_BASE: 'ftp://x',
        TELEGRAM_BOT_TOKEN: '',
      });
      expect.unreachable();
    } catch (error) {
      const message = (error as Error).message;
      expect(message).toContain('DEFAULT_TIMEZONE: accepts an IANA timezone name');
      expect(message).toContain('REMINDER_INTERVAL_SECONDS: accepts a whole number from 1 to 3600');
      expect(message).toContain('TELEGRAM_API_BASE: accepts an http:// or https:// URL');
    }
    expect(parseConfig({ TELEGRAM_BOT_TOKEN: '' }).TELEGRAM_BOT_TOKEN).toBeUndefined();
  });
});
