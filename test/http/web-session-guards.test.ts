import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES, type EngineEnv, engineEnv } from '../support/engines.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';

const PAGE = { 'x-parley-client': 'web', 'content-type': 'application/json' };

const cookieOf = (response: Response) =>
  (response.headers.get('set-cookie') ?? '').split(';')[0]?.replace(/^parley_session=/, '') ?? '';

/** Sign-in guessing and a changed API_TOKEN, over HTTP, on both engines. */
describe.each(ENGINES)('web sign-in guards on the %s engine', (engine) => {
  let storage: EngineEnv;
  let dataDir: string;
  let parley: RunningParley | undefined;

  beforeAll(async () => {
    storage = await engineEnv(engine);
    dataDir = mkdtempSync(join(tmpdir(), 'parley-guards-'));
  });
  afterAll(async () => {
    await parley?.stop();
    await storage?.cleanup();
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** (Re)starts Parley on the same database with this API_TOKEN. */
  const start = async (token: string, env: Record<string, string> = {}) => {
    await parley?.stop();
    parley = await startParley({ dataDir, env: { API_TOKEN: token, ...env, ...storage.env } });
    return parley;
  };
  const signIn = (server: RunningParley, key: string, forwardedFor?: string) =>
    server.fetch('/session', {
      method: 'POST',
      token: null,
      headers: forwardedFor ? { ...PAGE, 'x-forwarded-for': forwardedFor } : PAGE,
      body: JSON.stringify({ key }),
    });
  const withCookie = (server: RunningParley, cookie: string, path: string) =>
    server.fetch(path, { token: null, headers: { cookie: `parley_session=${cookie}` } });

  it('ends the administrator’s web sessions when API_TOKEN changes, and no user’s', async () => {
    let server = await start('first-admin-token');
    const created = await server.fetch('/admin/users', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ user_id: 'gina' }),
    });
    const { key } = (await created.json()) as { key: string };
    const admin = cookieOf(await signIn(server, 'first-admin-token'));
    const user = cookieOf(await signIn(server, key));
    expect((await withCookie(server, admin, '/admin/users')).status).toBe(200);

    // A restart with the same token keeps both sessions.
    server = await start('first-admin-token');
    expect((await withCookie(server, admin, '/admin/users')).status).toBe(200);
    expect((await withCookie(server, user, '/users/gina/history')).status).toBe(200);

    server = await start('second-admin-token');
    expect((await withCookie(server, admin, '/admin/users')).status).toBe(401);
    const who = await withCookie(server, admin, '/session');
    expect(await who.json()).toMatchObject({ signed_in: false, role: null });
    expect((await withCookie(server, user, '/users/gina/history')).status).toBe(200);
    // The new token signs in; the old one does not.
    expect((await signIn(server, 'first-admin-token')).status).toBe(401);
    const again = cookieOf(await signIn(server, 'second-admin-token'));
    expect((await withCookie(server, again, '/admin/users')).status).toBe(200);
  });

  it('makes a client address wait after 10 failed sign-ins in a minute, even with the right key', async () => {
    const server = await start('guarded-admin-token');
    for (let i = 0; i < 10; i++) {
      expect((await signIn(server, `pk_wrong${i}`)).status, `attempt ${i + 1}`).toBe(401);
    }
    const refused = await signIn(server, 'pk_wrong-again');
    expect(refused.status).toBe(429);
    const wait = Number(refused.headers.get('retry-after'));
    expect(wait).toBeGreaterThanOrEqual(1);
    expect(wait).toBeLessThanOrEqual(60);
    expect(((await refused.json()) as { detail: string }).detail).toMatch(
      /too many failed sign-ins/i,
    );
    expect((await signIn(server, 'guarded-admin-token')).status).toBe(429);
    // No proxy is trusted by default: a client cannot pick the address it is counted under.
    expect((await signIn(server, 'guarded-admin-token', '198.51.100.7')).status).toBe(429);
    // API clients, who never sign in, are not slowed.
    const bearer = await server.fetch('/admin/users', { token: 'guarded-admin-token' });
    expect(bearer.status).toBe(200);
  });

  it('behind a trusted proxy (TRUST_PROXY), counts each client by its forwarded address', async () => {
    const server = await start('proxied-admin-token', { TRUST_PROXY: 'loopback' });
    for (let i = 0; i < 10; i++) {
      expect((await signIn(server, `pk_guess${i}`, '203.0.113.5')).status).toBe(401);
    }
    expect((await signIn(server, 'proxied-admin-token', '203.0.113.5')).status).toBe(429);
    // Another person behind the same proxy is not made to wait for the guesser.
    expect((await signIn(server, 'proxied-admin-token', '203.0.113.6')).status).toBe(200);
  });

  it('with a hop count (TRUST_PROXY=1, as the compose file sets), counts the address the proxy appended', async () => {
    const server = await start('hop-admin-token', { TRUST_PROXY: '1' });
    // The client wrote 9.9.9.9 itself; the proxy appended the address it saw, 203.0.113.5.
    for (let i = 0; i < 10; i++) {
      const claimed = `9.9.9.${i}, 203.0.113.5`;
      expect((await signIn(server, `pk_guess${i}`, claimed)).status).toBe(401);
    }
    expect((await signIn(server, 'hop-admin-token', '8.8.8.8, 203.0.113.5')).status).toBe(429);
    expect((await signIn(server, 'hop-admin-token', '9.9.9.0, 203.0.113.6')).status).toBe(200);
  });

  it('takes the forwarded address only from a proxy TRUST_PROXY names (netmask form)', async () => {
    // The tests connect from 127.0.0.1, which 10.0.0.0/255.0.0.0 does not cover: a client
    // naming another address in X-Forwarded-For is still counted under its own.
    let server = await start('masked-admin-token', { TRUST_PROXY: '10.0.0.0/255.0.0.0' });
    for (let i = 0; i < 10; i++) {
      expect((await signIn(server, `pk_guess${i}`, `203.0.113.${i + 10}`)).status).toBe(401);
    }
    expect((await signIn(server, 'masked-admin-token', '203.0.113.99')).status).toBe(429);

    // 127.0.0.0/255.0.0.0 covers the peer: its X-Forwarded-For names the client.
    server = await start('masked-admin-token', { TRUST_PROXY: '127.0.0.0/255.0.0.0' });
    for (let i = 0; i < 10; i++) {
      expect((await signIn(server, `pk_guess${i}`, '203.0.113.5')).status).toBe(401);
    }
    expect((await signIn(server, 'masked-admin-token', '203.0.113.5')).status).toBe(429);
    expect((await signIn(server, 'masked-admin-token', '203.0.113.6')).status).toBe(200);
  });
});
