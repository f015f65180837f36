import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EngineStack, startEngineStack } from '../support/chat-stack.ts';
import { ENGINES } from '../support/engines.ts';
import { type Json, jsonCaller } from '../support/json-call.ts';

const ADMIN = 'admin-routes-admin-token';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
const USER_KEYS = ['created_at', 'keys', 'limits', 'user_id'];
const KEY_KEYS = ['created_at', 'expires_at', 'key_id', 'last_used_at', 'prefix'];
const LIMIT_KEYS = ['chats_per_minute', 'ingest_mb_per_day', 'storage_mb', 'tokens_per_day'];
const DEFAULTS = {
  chats_per_minute: 7,
  tokens_per_day: 1000,
  ingest_mb_per_day: 200,
  storage_mb: 500,
};

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

describe.each(ENGINES)('the admin routes on the %s engine', (engine) => {
  let stack: EngineStack;
  const call = jsonCaller(() => stack.parley);

  beforeAll(async () => {
    stack = await startEngineStack(engine, {
      API_TOKEN: ADMIN,
      EMBEDDINGS_PROVIDER: 'none',
      LIMIT_CHATS_PER_MINUTE: String(DEFAULTS.chats_per_minute),
      LIMIT_TOKENS_PER_DAY: String(DEFAULTS.tokens_per_day),
    });
  });
  afterAll(() => stack?.stop());

  it('lists users with exactly the contract fields, never a key or its hash', async () => {
    const created = await call(ADMIN, 'POST', '/admin/users', { user_id: 'lister' });
    expect(created.status).toBe(201);
    const first = created.body as { key_id: string; key: string };
    const second = await call(ADMIN, 'POST', '/admin/users/lister/keys', { expires_in_days: 30 });
    expect(second.status).toBe(201);
    const rotated = second.body as { key_id: string; key: string; expires_at: string };
    await call(ADMIN, 'POST', '/admin/users', { user_id: 'other' });
    // The first key is used, so it has a last_used_at (written off the request's path).
    expect((await call(first.key, 'GET', '/users/lister/usage')).status).toBe(200);

    // Waits as long as the test's own timeout allows: the stamp is written in the background.
    const deadline = Date.now() + 45_000;
    let listed = await call(ADMIN, 'GET', '/admin/users');
    const used = () =>
      listed.body.users
        .find((u: Json) => u.user_id === 'lister')
        ?.keys.some((k: Json) => k.last_used_at !== null);
    while (!used() && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      listed = await call(ADMIN, 'GET', '/admin/users');
    }
    const { status, text, body } = listed;
    expect(status).toBe(200);
    expect(Object.keys(body)).toEqual(['users']);
    expect(body.users.map((u: Json) => u.user_id).sort()).toEqual(['lister', 'other']);
    for (const user of body.users) {
      expect(Object.keys(user).sort()).toEqual(USER_KEYS);
      expect(user.created_at).toMatch(ISO);
      expect(Object.keys(user.limits).sort()).toEqual(LIMIT_KEYS);
      expect(user.limits).toEqual(DEFAULTS);
      for (const key of user.keys) {
        expect(Object.keys(key).sort()).toEqual(KEY_KEYS);
        expect(key.created_at).toMatch(ISO);
      }
    }
    const lister = body.users.find((u: Json) => u.user_id === 'lister');
    expect(lister.keys).toHaveLength(2);
    const byId = Object.fromEntries(lister.keys.map((k: Json) => [k.key_id, k]));
    expect(byId[first.key_id]).toMatchObject({
      prefix: first.key.slice(0, byId[first.key_id].prefix.length),
      expires_at: null,
      last_used_at: expect.stringMatching(ISO),
    });
    expect(byId[rotated.key_id]).toMatchObject({
      prefix: rotated.key.slice(0, byId[rotated.key_id].prefix.length),
      expires_at: rotated.expires_at,
      last_used_at: null,
    });
    // A prefix tells keys apart; it is far from the key itself.
    expect(byId[first.key_id].prefix).toMatch(/^pk_/);
    expect(byId[first.key_id].prefix.length).toBeLessThan(first.key.length / 2);

    // Nothing anywhere in the body is a key or a hash of one.
    for (const secret of [first.key, rotated.key]) {
      expect(text).not.toContain(secret);
      expect(text).not.toContain(secret.slice('pk_'.length));
      expect(text.toLowerCase()).not.toContain(sha256(secret));
      expect(text.toLowerCase()).not.toContain(sha256(secret).slice(0, 16));
    }
  });

  it('shows a PATCH override in the listed limits, and null puts the default back', async () => {
    await call(ADMIN, 'POST', '/admin/users', { user_id: 'patched' });
    const limitsOf = async () =>
      (await call(ADMIN, 'GET', '/admin/users')).body.users.find(
        (u: Json) => u.user_id === 'patched',
      ).limits;
    expect(await limitsOf()).toEqual(DEFAULTS);

    const patched = await call(ADMIN, 'PATCH', '/admin/users/patched', {
      limits: { chats_per_minute: 3, tokens_per_day: 0 },
    });
    expect(patched.status).toBe(200);
    expect(Object.keys(patched.body).sort()).toEqual(USER_KEYS);
    const overridden = { ...DEFAULTS, chats_per_minute: 3, tokens_per_day: 0 };
    expect(patched.body.limits).toEqual(overridden);
    expect(await limitsOf()).toEqual(overridden);

    // A PATCH that names one limit leaves the other override alone.
    await call(ADMIN, 'PATCH', '/admin/users/patched', { limits: { storage_mb: 9 } });
    expect(await limitsOf()).toEqual({ ...overridden, storage_mb: 9 });

    const reset = await call(ADMIN, 'PATCH', '/admin/users/patched', {
      limits: { chats_per_minute: null, tokens_per_day: null, storage_mb: null },
    });
    expect(reset.body.limits).toEqual(DEFAULTS);
    expect(await limitsOf()).toEqual(DEFAULTS);
    // The user sees the same limits in their usage.
    const usage = await call(ADMIN, 'GET', '/users/patched/usage');
    expect(usage.body.limits).toEqual(DEFAULTS);
  });

  it('documents every error response of the admin and account routes in /openapi.json', async () => {
    const document = (await call('', 'GET', '/openapi.json')).body as {
      paths: Record<string, Record<string, { responses: Record<string, Json> }>>;
    };
    const declared = (path: string, method: string) =>
      Object.keys(document.paths[path]?.[method]?.responses ?? {});
    // 401 and 403 everywhere (a user key gets 403 on an admin route, and on another user's
    // data); 404 where a named user or key may not exist; 409 for a user that exists; 422
    // where a path parameter or body can be invalid.
    const expected: [string, string, string[]][] = [
      ['/admin/users', 'post', ['201', '401', '403', '409', '422']],
      ['/admin/users', 'get', ['200', '401', '403']],
      ['/admin/users/{user_id}', 'patch', ['200', '401', '403', '404', '422']],
      ['/admin/users/{user_id}', 'delete', ['200', '401', '403', '404', '422']],
      ['/admin/users/{user_id}/keys', 'post', ['201', '401', '403', '404', '422']],
      ['/admin/keys/{key_id}', 'delete', ['200', '401', '403', '404', '422']],
      ['/admin/jobs', 'get', ['200', '401', '403', '422']],
      ['/users/{user_id}/usage', 'get', ['200', '401', '403', '422']],
      ['/users/{user_id}/export', 'get', ['401', '403', '422']],
    ];
    for (const [path, method, statuses] of expected) {
      expect(declared(path, method), `${method.toUpperCase()} ${path}`).toEqual(
        expect.arrayContaining(statuses),
      );
      for (const status of statuses.filter((s) => Number(s) >= 400)) {
        const body = document.paths[path]?.[method]?.responses[status];
        expect(JSON.stringify(body), `${method} ${path} ${status}`).toContain('"detail"');
      }
    }
    // The export is streamed, yet its success is documented too, with the fields it has.
    const exported = document.paths['/users/{user_id}/export']?.get?.responses['200'];
    const documented = Object.keys(
      exported?.content?.['application/json']?.schema?.properties ?? {},
    ).sort();
    await call(ADMIN, 'POST', '/admin/users', { user_id: 'exported' });
    const real = await call(ADMIN, 'GET', '/users/exported/export');
    expect(real.status).toBe(200);
    expect(documented).toEqual(Object.keys(real.body).sort());
  });

  it('answers with the statuses it documents', async () => {
    // The documented 404, 409, 422 and 403 are what the routes really answer.
    await call(ADMIN, 'POST', '/admin/users', { user_id: 'statuses' });
    const key = (await call(ADMIN, 'POST', '/admin/users/statuses/keys', {})).body.key;
    expect((await call(ADMIN, 'POST', '/admin/users', { user_id: 'statuses' })).status).toBe(409);
    expect((await call(ADMIN, 'PATCH', '/admin/users/nobody', { limits: {} })).status).toBe(404);
    expect((await call(ADMIN, 'DELETE', '/admin/users/nobody')).status).toBe(404);
    expect((await call(ADMIN, 'POST', '/admin/users/nobody/keys', {})).status).toBe(404);
    expect(
      (await call(ADMIN, 'DELETE', '/admin/keys/00000000-0000-4000-8000-000000000000')).status,
    ).toBe(404);
    expect((await call(ADMIN, 'DELETE', '/admin/keys/nope')).status).toBe(422);
    expect((await call(ADMIN, 'GET', '/admin/jobs?state=lost')).status).toBe(422);
    for (const [method, path] of [
      ['GET', '/admin/users'],
      ['GET', '/admin/jobs?state=failed'],
      ['PATCH', '/admin/users/statuses'],
      ['GET', '/users/someone-else/usage'],
      ['GET', '/users/someone-else/export'],
    ] as const) {
      const refused = await call(
        key,
        method,
        path,
        method === 'PATCH' ? { limits: {} } : undefined,
      );
      expect(refused.status, `${method} ${path}`).toBe(403);
      expect(refused.body).toEqual({ detail: expect.any(String) });
    }
  });
});
