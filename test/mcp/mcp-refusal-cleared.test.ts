import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EngineSetup, engineSetup } from '../support/engine-setup.ts';
import { ENGINES } from '../support/engines.ts';
import { type FakeLlmServer, reply } from '../support/fake-llm-server.ts';
import { type FakeMcpHttpServer, startFakeMcpHttpServer } from '../support/fake-mcp-server.ts';
import { type Json, jsonCaller } from '../support/json-call.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';

/**
 * A user's refusal by an HTTP MCP server (`refused` in GET /users/{id}/mcp-servers) ends
 * when the server takes the same credential again, the fix being on the server's side (it
 * had revoked or lost the token): the user stores nothing new, and their next chat that
 * connects clears it, whether the Parley process that connects is the one that was refused
 * or one started since.
 */

const ADMIN = 'mcp-refusal-admin-token';
const KEY = Buffer.alloc(32, 9).toString('base64');
const TOKEN = 'Bearer token-of-bob';
/** The back-off after a first failure (src/mcp/mcp-connections.ts), and a little more. */
const FIRST_BACKOFF_MS = 1_200;

function toolResult(llm: FakeLlmServer, id: string): string | undefined {
  for (const chat of llm.chats) {
    for (const message of chat.body.messages) {
      if (message.role === 'tool' && message.tool_call_id === id) return String(message.content);
    }
  }
  return undefined;
}

describe.each(ENGINES)('a refused MCP user taken again, on the %s engine', (engine) => {
  let llm: FakeLlmServer;
  let setup: EngineSetup;
  let parley: RunningParley;
  let gate: FakeMcpHttpServer;
  let bobKey: string;
  let serverId: string;
  const call = jsonCaller(() => parley);
  const start = async () => {
    parley = await startParley({
      dataDir: setup.dataDir,
      token: ADMIN,
      env: {
        ...setup.env,
        API_TOKEN: ADMIN,
        EMBEDDINGS_PROVIDER: 'none',
        MCP_CREDENTIALS_KEY: KEY,
      },
    });
  };

  beforeAll(async () => {
    setup = await engineSetup(engine);
    llm = setup.llm;
    gate = await startFakeMcpHttpServer();
    await start();
    bobKey = (await call(ADMIN, 'POST', '/admin/users', { user_id: 'bob' })).body.key;
    const created = await call(ADMIN, 'POST', '/admin/mcp-servers', {
      transport: 'http',
      name: 'gate',
      url: gate.url,
      trusted: true,
    });
    expect(created.status, created.text).toBe(201);
    serverId = created.body.id;
    await call(ADMIN, 'PATCH', `/admin/mcp-servers/${serverId}`, { enabled: true });
    const stored = await call(bobKey, 'PUT', `/users/bob/mcp-servers/${serverId}`, {
      credential: { value: TOKEN },
    });
    expect(stored.status, stored.text).toBe(200);
  }, 120_000);
  afterAll(async () => {
    await parley?.stop();
    await gate?.close();
    await setup?.cleanup();
  });

  const gateFor = async (): Promise<Json> =>
    ((await call(bobKey, 'GET', '/users/bob/mcp-servers')).body.servers as Json[]).find(
      (s) => s.name === 'gate',
    );
  const chat = async (message: string) => {
    const response = await parley.fetch('/chat', {
      method: 'POST',
      token: bobKey,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ user_id: 'bob', message }),
    });
    expect(response.status).toBe(200);
    await response.text();
  };
  /** A chat while the server refuses Bob's token: it is left out, and Bob is told why. */
  const refuseBob = async () => {
    gate.refusing.add(TOKEN);
    llm.enqueue(reply.text('Without it.'));
    await chat('who am I');
    await expect
      .poll(async () => (await gateFor())?.refused?.reason)
      .toBe('the server answered HTTP 401');
    expect((await gateFor()).tools.offered).toBe(0);
  };
  /** The server takes the same token again: Bob's next chat uses it, and clears his refusal. */
  const takeBobAgain = async (id: string) => {
    gate.refusing.delete(TOKEN);
    llm.enqueue(reply.toolCalls([{ id, name: 'gate__whoami', args: {} }]), reply.text('Done.'));
    await chat('who am I now');
    expect(toolResult(llm, id)).toBe(`auth=${TOKEN}`);
    await expect.poll(async () => (await gateFor()).refused).toBeNull();
    const gateNow = await gateFor();
    expect(gateNow.has_credential).toBe(true);
    expect(gateNow.tools.offered).toBeGreaterThan(0);
  };

  it('clears the refusal at the next connection of the process that was refused', async () => {
    await refuseBob();
    // Its back-off over, the next chat connects again, with the token Bob stored before.
    await new Promise((resolve) => setTimeout(resolve, FIRST_BACKOFF_MS));
    await takeBobAgain('who-same-process');
  });

  it('clears a refusal stored before a restart at the first connection after it', async () => {
    // A fresh connection: the open one above would not ask the server again.
    await call(ADMIN, 'PATCH', `/admin/mcp-servers/${serverId}`, { enabled: false });
    await call(ADMIN, 'PATCH', `/admin/mcp-servers/${serverId}`, { enabled: true });
    await refuseBob();
    await parley.stop();
    await start();
    expect((await gateFor()).refused?.reason).toBe('the server answered HTTP 401');
    await takeBobAgain('who-after-restart');
  });
});
