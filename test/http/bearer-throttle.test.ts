import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES, type EngineEnv, engineEnv } from '../support/engines.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';

const ADMIN = 'weak-admin-token';
const SCRAPER = 'weak-metrics-token';
/** BEARER_FAILURES_PER_MINUTE (src/http/credential-throttle.ts). */
const LIMIT = 10;

/**
 * Bearer guessing over HTTP, on both engines: each case comes from its own client address
 * (TRUST_PROXY trusts the tests' loopback peer, so X-Forwarded-For names the client), and the
 * window passes by moving the service's test clock, not by waiting a minute.
 */
describe.each(ENGINES)('the bearer throttle on the %s engine', (engine) => {
  let storage: EngineEnv;
  let parley: RunningParley;
  let clockDir: string;
  let clockFile: string;
  let clock = Date.now();
  const moveClock = (ms: number) => {
    clock += ms;
    writeFileSync(clockFile, new Date(clock).toISOString());
  };

  beforeAll(async () => {
    storage = await engineEnv(engine);
    clockDir = mkdtempSync(join(tmpdir(), 'parley-clock-'));
    clockFile = join(clockDir, 'now');
    moveClock(0);
    parley = await startParley({
      env: {
        API_TOKEN: ADMIN,
        TRUST_PROXY: 'loopback',
        METRICS_ENABLED: 'true',
        METRICS_TOKEN: SCRAPER,
        EMBEDDINGS_PROVIDER: 'none',
        PARLEY_TEST_CLOCK_FILE: clockFile,
        ...storage.env,
      },
      token: null,
    });
  });
  afterAll(async () => {
    await parley?.stop();
    await storage?.cleanup();
    rmSync(clockDir, { recursive: true, force: true });
  });

  /** A request from `from`, with `Authorization: Bearer <credential>` unless it is null. */
  const call = (from: string, credential: string | null, path = '/admin/users') =>
    parley.fetch(path, {
      token: null,
      headers: {
        'x-forwarded-for': from,
        ...(credential !== null && { authorization: `Bearer ${credential}` }),
      },
    });

  it('answers 401 to the first wrong tokens, then 429 to the address, the right token too, until the window passes', async () => {
    const from = '203.0.113.10';
    for (let i = 0; i < LIMIT; i++) {
      const wrong = await call(from, `guess-${i}`);
      expect(wrong.status, `guess ${i + 1}`).toBe(401);
      expect(wrong.headers.get('www-authenticate')).toBe('Bearer');
      expect(await wrong.json()).toEqual({ detail: 'Unauthorized' });
    }
    const refused = await call(from, 'guess-again');
    expect(refused.status).toBe(429);
    const wait = Number(refused.headers.get('retry-after'));
    expect(wait).toBeGreaterThanOrEqual(1);
    expect(wait).toBeLessThanOrEqual(60);
    expect(await refused.json()).toEqual({ detail: expect.stringMatching(/too many wrong/i) });

    // A guess inside the window learns nothing: the right token is refused the same way.
    const right = await call(from, ADMIN);
    expect(right.status).toBe(429);
    expect(right.headers.get('retry-after')).not.toBeNull();

    // One warn line names the address and the count, never a credential.
    const line = await parley.waitForLog((l) => l.address === from);
    expect(line).toMatchObject({ level: 40, address: from, failures: LIMIT });
    await parley.settled();
    expect(parley.logs.filter((l) => l.address === from)).toHaveLength(1);
    for (const secret of ['guess-0', `guess-${LIMIT - 1}`, 'guess-again', ADMIN]) {
      expect(parley.output()).not.toContain(secret);
    }

    // Another client behind the same proxy is not made to wait for the guesser.
    expect((await call('203.0.113.11', ADMIN)).status).toBe(200);
    expect((await call('203.0.113.11', 'a-wrong-one')).status).toBe(401);

    // The open routes, without a credential, answer the waiting address as ever.
    for (const path of ['/health', '/openapi.json', '/docs']) {
      expect((await call(from, null, path)).status, path).toBe(200);
    }

    moveClock(30_000);
    expect((await call(from, ADMIN)).status).toBe(429);
    moveClock(31_000); // the oldest failure is now over a minute old
    expect((await call(from, ADMIN)).status).toBe(200);
  });

  it('counts API_TOKEN and METRICS_TOKEN guesses alike, and never a right credential', async () => {
    const from = '203.0.113.20';
    // Successes in between are not counted and do not wipe the failures before them.
    for (let i = 0; i < LIMIT; i++) {
      const [credential, path] =
        i % 2 === 0 ? [`admin-guess-${i}`, '/documents'] : [`metrics-guess-${i}`, '/metrics'];
      expect((await call(from, credential, path)).status, `guess ${i + 1}`).toBe(401);
      if (i === LIMIT - 1) break;
      expect((await call(from, ADMIN)).status).toBe(200);
      expect((await call(from, SCRAPER, '/metrics')).status).toBe(200);
    }
    // The scraper's right token now waits too: the check comes before the comparison.
    expect((await call(from, SCRAPER, '/metrics')).status).toBe(429);
    expect((await call(from, ADMIN, '/documents')).status).toBe(429);
  });

  it('never counts a key, right or wrong, and lets keys in from a waiting address', async () => {
    const from = '203.0.113.21';
    const created = await parley.fetch('/admin/users', {
      method: 'POST',
      token: ADMIN,
      headers: { 'content-type': 'application/json', 'x-forwarded-for': '203.0.113.98' },
      body: JSON.stringify({ user_id: 'keyholder' }),
    });
    expect(created.status).toBe(201);
    const { key } = (await created.json()) as { key: string };
    const second = await parley.fetch('/admin/users/keyholder/keys', {
      method: 'POST',
      token: ADMIN,
      headers: { 'content-type': 'application/json', 'x-forwarded-for': '203.0.113.98' },
      body: '{}',
    });
    const revoked = (await second.json()) as { key_id: string; key: string };
    const revoke = await parley.fetch(`/admin/keys/${revoked.key_id}`, {
      method: 'DELETE',
      token: ADMIN,
      headers: { 'x-forwarded-for': '203.0.113.98' },
    });
    expect(revoke.status).toBe(200);

    // A client still holding a revoked key, or a mistyped one, retries and retries: the
    // address (say, the trusted server in front) must not be made to wait for it.
    const unknown = `pk_${'x'.repeat(42)}1`;
    for (let i = 0; i < LIMIT * 2; i++) {
      const wrong = i % 2 === 0 ? unknown : revoked.key;
      // /metrics checks METRICS_TOKEN itself, and must not count a key either.
      const path = i % 4 < 2 ? '/documents' : '/metrics';
      expect((await call(from, wrong, path)).status, `wrong key ${i + 1}`).toBe(401);
    }
    expect((await call(from, ADMIN, '/documents')).status).toBe(200);

    // Token guesses do make it wait; a key from there still gets in.
    for (let i = 0; i < LIMIT; i++) expect((await call(from, `guess-${i}`)).status).toBe(401);
    expect((await call(from, ADMIN, '/documents')).status).toBe(429);
    expect((await call(from, key, '/documents')).status).toBe(200);
  });

  it('counts an IPv6 client as its /64, not as each of its addresses', async () => {
    for (let i = 0; i < LIMIT; i++) {
      expect((await call(`2001:db8:7:7::${(i + 1).toString(16)}`, `guess-${i}`)).status).toBe(401);
    }
    expect((await call('2001:db8:7:7:ffff:1:2:3', ADMIN)).status).toBe(429);
    expect((await call('2001:db8:7:8::1', ADMIN)).status).toBe(200);
  });

  it('documents the 429 on every route that documents a 401', async () => {
    const spec = (await (await parley.fetch('/openapi.json', { token: null })).json()) as {
      paths: Record<string, Record<string, { responses?: Record<string, unknown> }>>;
    };
    const missing: string[] = [];
    let checked = 0;
    for (const [path, operations] of Object.entries(spec.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        const responses = operation.responses ?? {};
        if (!('401' in responses)) continue;
        checked++;
        if (!('429' in responses)) missing.push(`${method.toUpperCase()} ${path}`);
      }
    }
    expect(checked).toBeGreaterThan(20);
    expect(missing).toEqual([]);
  });

  it('counts failed web sign-ins apart, and lets the address sign in once the window passes', async () => {
    const from = '203.0.113.50';
    const signIn = (key: string) =>
      parley.fetch('/session', {
        method: 'POST',
        token: null,
        headers: {
          'x-parley-client': 'web',
          'content-type': 'application/json',
          'x-forwarded-for': from,
        },
        body: JSON.stringify({ key }),
      });
    for (let i = 0; i < LIMIT; i++) expect((await signIn(`wrong-${i}`)).status).toBe(401);
    const refused = await signIn(ADMIN);
    expect(refused.status).toBe(429);
    expect(await refused.json()).toEqual({ detail: expect.stringMatching(/failed sign-ins/i) });
    // Apart from the API's count: the same address's bearer token still works.
    expect((await call(from, ADMIN)).status).toBe(200);
    moveClock(61_000); // on the service's clock, as the bearer throttle's window
    expect((await signIn(ADMIN)).status).toBe(200);
  });

  it('never throttles requests without a credential', async () => {
    const from = '203.0.113.30';
    for (let i = 0; i < LIMIT * 2; i++) {
      expect((await call(from, null, '/documents')).status).toBe(401);
      expect((await call(from, null, '/metrics')).status).toBe(401);
      expect((await call(from, null, '/health')).status).toBe(200);
    }
    expect((await call(from, ADMIN, '/documents')).status).toBe(200);
  });

  it('answers the OpenAI door’s 429 in OpenAI’s shape, which the SDK raises as RateLimitError', async () => {
    const from = '203.0.113.40';
    const client = (apiKey: string) =>
      new OpenAI({
        baseURL: `${parley.url}/v1`,
        apiKey,
        maxRetries: 0,
        defaultHeaders: { 'x-forwarded-for': from },
      });
    for (let i = 0; i < LIMIT; i++) {
      const error = await client(`sk-guess-${i}`)
        .models.list()
        .catch((e: unknown) => e);
      expect(error, `guess ${i + 1}`).toBeInstanceOf(OpenAI.AuthenticationError);
    }
    const limited = await client(ADMIN)
      .models.list()
      .catch((e: unknown) => e);
    expect(limited).toBeInstanceOf(OpenAI.RateLimitError);
    const raw = await call(from, ADMIN, '/v1/models');
    expect(raw.status).toBe(429);
    expect(raw.headers.get('retry-after')).not.toBeNull();
    expect(await raw.json()).toEqual({
      error: {
        message: expect.stringMatching(/too many wrong/i),
        type: 'rate_limit_error',
        param: null,
        code: 'rate_limit_exceeded',
      },
    });
  });
});
