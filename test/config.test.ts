import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig, readEnvironment, workerCount } from '../src/config.ts';

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

  it('retries a failed memory decision after MEMORY_RETRY_MS, 5 s by default, a second at the least', () => {
    expect(parseConfig({}).MEMORY_RETRY_MS).toBe(5_000);
    expect(parseConfig({ MEMORY_RETRY_MS: '1000' }).MEMORY_RETRY_MS).toBe(1_000);
    for (const bad of ['999', '1500.5', 'soon', '3600001']) {
      expect(() => parseConfig({ MEMORY_RETRY_MS: bad })).toThrow(
        `MEMORY_RETRY_MS: accepts a whole number from 1000 to 3600000 (got "${bad}")`,
      );
    }
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

  it('takes a webhook secret of 32 to 256 of the characters Telegram allows, and nothing shorter', () => {
    const ok = 'a'.repeat(32);
    expect(parseConfig({ TELEGRAM_WEBHOOK_SECRET: ok }).TELEGRAM_WEBHOOK_SECRET).toBe(ok);
    expect(
      parseConfig({ TELEGRAM_WEBHOOK_SECRET: 'Z_-9'.repeat(64) }).TELEGRAM_WEBHOOK_SECRET,
    ).toHaveLength(256);
    for (const bad of ['a'.repeat(31), 'a'.repeat(257), `${'a'.repeat(31)}!`, `${ok} `]) {
      expect(() => parseConfig({ TELEGRAM_WEBHOOK_SECRET: bad })).toThrow(
        'TELEGRAM_WEBHOOK_SECRET: accepts 32-256 of A-Z, a-z, 0-9, _ and -',
      );
    }
  });

  it('reads PARLEY_WORKERS as a count or auto (the cores), and needs DATABASE_URL for more than one', () => {
    expect(parseConfig({}).PARLEY_WORKERS).toBe(1);
    expect(parseConfig({ PARLEY_WORKERS: ' Auto ' }).PARLEY_WORKERS).toBe('auto');
    expect(parseConfig({ PARLEY_WORKERS: '4' }).PARLEY_WORKERS).toBe(4);
    for (const bad of ['0', '2.5', 'many', '257']) {
      expect(() => parseConfig({ PARLEY_WORKERS: bad })).toThrow(
        `PARLEY_WORKERS: accepts auto or a whole number from 1 to 256 (got "${bad}")`,
      );
    }
    const server = 'postgres://parley@db/parley';
    expect(workerCount(parseConfig({ PARLEY_WORKERS: 'auto', DATABASE_URL: server }), 6)).toBe(6);
    expect(workerCount(parseConfig({ PARLEY_WORKERS: 'auto' }), 1)).toBe(1);
    expect(() => workerCount(parseConfig({ PARLEY_WORKERS: 'auto' }), 2)).toThrow(
      'PARLEY_WORKERS=auto needs DATABASE_URL',
    );
  });

  it('reads TRUST_PROXY as a hop count or a list of proxies, and trusts none by default', () => {
    expect(parseConfig({}).TRUST_PROXY).toBeUndefined();
    expect(parseConfig({ TRUST_PROXY: '1' }).TRUST_PROXY).toBe(1);
    expect(parseConfig({ TRUST_PROXY: 'loopback, 10.0.0.0/8,fd00::1' }).TRUST_PROXY).toEqual([
      'loopback',
      '10.0.0.0/8',
      'fd00::1',
    ]);
    // Whatever Fastify's trustProxy accepts: a netmask, an IPv4-mapped IPv6 address.
    expect(
      parseConfig({ TRUST_PROXY: '10.0.0.0/255.0.0.0, ::ffff:192.0.2.1, linklocal' }).TRUST_PROXY,
    ).toEqual(['10.0.0.0/255.0.0.0', '::ffff:192.0.2.1', 'linklocal']);
    for (const [bad, why] of [
      ['0', 'a hop count is 1 to 10'],
      ['11', 'a hop count is 1 to 10'],
      ['true', '"true" is not a hop count'],
      ['false', '"false" is not a hop count'],
      ['10.0.0.0/33', '"10.0.0.0/33" is not a hop count'],
      ['10.0.0.0/255.0.255.0', '"10.0.0.0/255.0.255.0" is not a hop count'],
      ['loopback, 10.0.0.300', '"10.0.0.300" is not a hop count'],
      ['loopback,', '"" is not a hop count'],
      ['nginx', '"nginx" is not a hop count'],
    ]) {
      expect(() => parseConfig({ TRUST_PROXY: bad }), bad).toThrow(`TRUST_PROXY: ${why}`);
    }
  });

  it('reads MCP_ALLOWED_ORIGINS as a list of exact origins, and allows none by default', () => {
    expect(parseConfig({}).MCP_ALLOWED_ORIGINS).toBeUndefined();
    expect(
      parseConfig({ MCP_ALLOWED_ORIGINS: 'https://a.example, http://127.0.0.1:6274' })
        .MCP_ALLOWED_ORIGINS,
    ).toEqual(['https://a.example', 'http://127.0.0.1:6274']);
    // Browsers send an origin exactly: no path, no trailing slash, no default port, lower case.
    for (const bad of [
      'https://a.example/',
      'https://a.example/mcp',
      'https://a.example:443',
      'HTTPS://A.example',
      'a.example',
      'ftp://a.example',
      'https://a.example,',
      '*',
    ]) {
      expect(() => parseConfig({ MCP_ALLOWED_ORIGINS: bad }), bad).toThrow('MCP_ALLOWED_ORIGINS:');
    }
  });

  it.each([
    // Below its own header and "N more" line, the graph section held no fact at all.
    ['GRAPH_PROMPT_MAX_CHARS', '299', 'accepts a whole number from 300 to 100000'],
    // PGlite failed to initialize, saying nothing of why, below 128kB or above what it can hold.
    ['EMBEDDED_DB_SHARED_BUFFERS', '0MB', 'accepts auto or a size from 128kB to 1GB'],
    ['EMBEDDED_DB_SHARED_BUFFERS', '100kB', 'accepts auto or a size from 128kB to 1GB'],
    ['EMBEDDED_DB_SHARED_BUFFERS', '2GB', 'accepts auto or a size from 128kB to 1GB'],
  ])('refuses %s=%s, a size the service cannot work with', (name, value, accepts) => {
    expect(() => parseConfig({ [name]: value })).toThrow(`${name}: ${accepts}`);
  });

  it('takes the least and the most of those sizes that work', () => {
    const config = parseConfig({
      GRAPH_PROMPT_MAX_CHARS: '300',
      EMBEDDED_DB_SHARED_BUFFERS: '128kB',
    });
    expect(config).toMatchObject({
      GRAPH_PROMPT_MAX_CHARS: 300,
      EMBEDDED_DB_SHARED_BUFFERS: '128kB',
    });
    expect(parseConfig({ EMBEDDED_DB_SHARED_BUFFERS: '1GB' }).EMBEDDED_DB_SHARED_BUFFERS).toBe(
      '1GB',
    );
  });

  it('serves no metrics unless METRICS_ENABLED', () => {
    expect(parseConfig({}).METRICS_ENABLED).toBe(false);
    expect(parseConfig({ METRICS_TOKEN: '' }).METRICS_TOKEN).toBeUndefined();
    expect(parseConfig({ METRICS_ENABLED: 'yes', METRICS_TOKEN: 's' })).toMatchObject({
      METRICS_ENABLED: true,
      METRICS_TOKEN: 's',
    });
  });
});
