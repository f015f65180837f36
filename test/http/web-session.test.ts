import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES, type EngineEnv, engineEnv } from '../support/engines.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';

const TOKEN = 'web-session-admin-token';
const PAGE = { 'x-parley-client': 'web', 'content-type': 'application/json' };

/** The cookie's value from a sign-in's Set-Cookie, and the attributes it was set with. */
function cookieOf(response: Response): { value: string; attributes: string[] } {
  const header = response.headers.get('set-cookie') ?? '';
  const [pair = '', ...attributes] = header.split(';').map((part) => part.trim());
  return { value: pair.replace(/^parley_session=/, ''), attributes };
}

describe.each(ENGINES)('web client sessions on the %s engine', (engine) => {
  let parley: RunningParley;
  let storage: EngineEnv;
  let key: string;
  let keyId: string;

  beforeAll(async () => {
    storage = await engineEnv(engine);
    parley = await startParley({ env: { API_TOKEN: TOKEN, ...storage.env } });
    const created = await parley.fetch('/admin/users', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ user_id: 'wendy' }),
    });
    ({ key, key_id: keyId } = (await created.json()) as { key: string; key_id: string });
  });
  afterAll(async () => {
    await parley?.stop();
    await storage?.cleanup();
  });

  const signIn = (body: unknown, headers: Record<string, string> = PAGE) =>
    parley.fetch('/session', { method: 'POST', token: null, headers, body: JSON.stringify(body) });
  const withCookie = (value: string, path: string, init: RequestInit = {}) =>
    parley.fetch(path, {
      ...init,
      token: null,
      headers: { ...(init.headers as Record<string, string>), cookie: `parley_session=${value}` },
    });

  it('exchanges a key for an HttpOnly SameSite=Strict cookie that acts as its user', async () => {
    const response = await signIn({ key });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      signed_in: true,
      role: 'user',
      user_id: 'wendy',
      development: false,
    });
    const cookie = cookieOf(response);
    expect(cookie.value).toMatch(/^[\w-]{43}$/);
    expect(cookie.attributes).toEqual(
      expect.arrayContaining(['Path=/', 'HttpOnly', 'SameSite=Strict']),
    );
    expect(cookie.attributes).not.toContain('Secure'); // plain http here
    expect(response.headers.get('cache-control')).toBe('no-store');

    const own = await withCookie(cookie.value, '/users/wendy/history');
    expect(own.status).toBe(200);
    const other = await withCookie(cookie.value, '/users/someone-else/history');
    expect(other.status).toBe(403);
    const who = await withCookie(cookie.value, '/session');
    expect(await who.json()).toMatchObject({ signed_in: true, user_id: 'wendy' });
  });

  it('marks the cookie Secure behind an HTTPS proxy', async () => {
    const response = await signIn({ key }, { ...PAGE, 'x-forwarded-proto': 'https' });
    expect(cookieOf(response).attributes).toContain('Secure');
  });

  it('refuses a wrong key, and a sign-in or change that does not come from the page', async () => {
    expect((await signIn({ key: `${key.slice(0, -1)}x` })).status).toBe(401);
    expect((await signIn({ key: 'not-the-token' })).status).toBe(401);
    expect((await signIn({ user_id: 'wendy' })).status).toBe(401); // not in development mode
    const noHeader = await signIn({ key }, { 'content-type': 'application/json' });
    expect(noHeader.status).toBe(403);

    const { value } = cookieOf(await signIn({ key }));
    const change = (headers: Record<string, string>) =>
      withCookie(value, '/reset?user_id=wendy', { method: 'POST', headers });
    expect((await change({})).status).toBe(403); // a cross-site form sends no header
    expect((await change({ 'x-parley-client': 'web', origin: 'http://evil.example' })).status).toBe(
      403,
    );
    expect(
      (await change({ 'x-parley-client': 'web', 'sec-fetch-site': 'cross-site' })).status,
    ).toBe(403);
    const own = new URL(parley.url);
    expect((await change({ 'x-parley-client': 'web', origin: own.origin })).status).toBe(200);
  });

  it('ends the session on sign-out: the old cookie is 401', async () => {
    const { value } = cookieOf(await signIn({ key }));
    expect((await withCookie(value, '/documents')).status).toBe(200);
    const out = await withCookie(value, '/session', {
      method: 'DELETE',
      headers: { 'x-parley-client': 'web' },
    });
    expect(out.status).toBe(200);
    expect(cookieOf(out).attributes).toContain('Max-Age=0');
    const after = await withCookie(value, '/documents');
    expect(after.status).toBe(401);
    expect(await (await withCookie(value, '/session')).json()).toMatchObject({ signed_in: false });
  });

  it('lets the administrator token sign in as the administrator', async () => {
    const response = await signIn({ key: TOKEN });
    expect(await response.json()).toMatchObject({ signed_in: true, role: 'admin', user_id: null });
    const users = await withCookie(cookieOf(response).value, '/admin/users');
    expect(users.status).toBe(200);
  });

  it('keeps the API as it was for bearer clients, cookie or not', async () => {
    const bearer = await parley.fetch('/users/wendy/history', {
      token: null,
      headers: { authorization: `Bearer ${key}` },
    });
    expect(bearer.status).toBe(200);
    expect(bearer.headers.get('set-cookie')).toBeNull();
    // A bearer request needs no x-parley-client header to change something.
    const reset = await parley.fetch('/reset?user_id=wendy', {
      method: 'POST',
      token: null,
      headers: { authorization: `Bearer ${key}` },
    });
    expect(reset.status).toBe(200);
  });

  it('ends every session of a key when the key is revoked', async () => {
    const added = await parley.fetch('/admin/users/wendy/keys', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    const second = (await added.json()) as { key: string; key_id: string };
    const { value } = cookieOf(await signIn({ key: second.key }));
    expect((await withCookie(value, '/documents')).status).toBe(200);
    const revoked = await parley.fetch(`/admin/keys/${second.key_id}`, { method: 'DELETE' });
    expect(revoked.status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 1_000)); // the session cache's 900 ms
    expect((await withCookie(value, '/documents')).status).toBe(401);
    expect(keyId).not.toBe(second.key_id);
  });

  it('serves the page with a strict Content-Security-Policy, compressed, without a token', async () => {
    const page = await parley.fetch('/', { token: null, headers: { 'accept-encoding': 'br' } });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const csp = page.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|https?:/);
    expect(page.headers.get('x-content-type-options')).toBe('nosniff');
    expect(page.headers.get('referrer-policy')).toBe('no-referrer');
    const html = await page.text(); // fetch undoes the brotli
    expect(html).not.toMatch(/<script>|<script [^>]*>[^<]/); // no inline script
    const assets = [...html.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((m) => m[1] ?? '');
    expect(assets).toHaveLength(2);
    // Nothing from another origin: every src and href is this server's.
    expect([...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1])).toEqual(
      expect.arrayContaining(assets),
    );
    expect(html).not.toMatch(/(?:src|href)="(?:https?:)?\/\//);
    for (const asset of assets) {
      const response = await parley.fetch(asset, { token: null });
      expect(response.status, asset).toBe(200);
      expect(response.headers.get('cache-control')).toContain('immutable');
    }
    const api = await parley.fetch('/documents');
    expect(api.headers.get('x-content-type-options')).toBe('nosniff');
  });
});

describe('web client sessions in development mode (no API_TOKEN)', () => {
  let parley: RunningParley;

  beforeAll(async () => {
    parley = await startParley();
  });
  afterAll(async () => {
    await parley?.stop();
  });

  it('signs in by user name, and the page then acts as that user', async () => {
    const before = await parley.fetch('/session');
    expect(await before.json()).toEqual({
      signed_in: false,
      role: null,
      user_id: null,
      development: true,
    });
    const response = await parley.fetch('/session', {
      method: 'POST',
      headers: PAGE,
      body: JSON.stringify({ user_id: 'dev-dana' }),
    });
    expect(await response.json()).toMatchObject({ role: 'user', user_id: 'dev-dana' });
    const cookie = `parley_session=${cookieOf(response).value}`;
    const other = await parley.fetch('/users/someone/history', { headers: { cookie } });
    expect(other.status).toBe(403);
    const own = await parley.fetch('/users/dev-dana/history', { headers: { cookie } });
    expect(own.status).toBe(200);
  });
});
