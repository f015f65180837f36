import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parseChatStream } from '../support/chat-stream.ts';
import { type EngineSetup, engineSetup } from '../support/engine-setup.ts';
import { ENGINES } from '../support/engines.ts';
import { type FakeLlmServer, reply } from '../support/fake-llm-server.ts';
import { type FakeMcpHttpServer, startFakeMcpHttpServer } from '../support/fake-mcp-server.ts';
import { jsonCaller } from '../support/json-call.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';

const ADMIN = 'mcp-oversized-admin';
const FAKE_MCP = fileURLToPath(new URL('../support/fake-mcp-server.ts', import.meta.url));

/**
 * An MCP server whose result is 12 MB: more than the 10 MiB Parley reads of a message. Over
 * stdio (one line) the user must get an answer at once saying so, not wait out the call
 * timeout (30 s, the default here) to be told the server did not answer; over HTTP (an SSE
 * event or a JSON body) Parley must not read it whole (a 200 MB answer held the event loop
 * 12 s and took 1 GB). Either way the server's next call must work.
 */
describe.each(ENGINES)('an MCP result over 10 MiB, on the %s engine', (engine) => {
  let llm: FakeLlmServer;
  let setup: EngineSetup;
  let parley: RunningParley;
  let sse: FakeMcpHttpServer;
  let json: FakeMcpHttpServer;
  const call = jsonCaller(() => parley);
  const toolResult = (id: string) => {
    for (const chat of llm.chats) {
      for (const message of chat.body.messages) {
        if (message.role === 'tool' && message.tool_call_id === id) return String(message.content);
      }
    }
    return undefined;
  };

  beforeAll(async () => {
    setup = await engineSetup(engine);
    llm = setup.llm;
    sse = await startFakeMcpHttpServer({ bigBytes: 12_000_000 });
    json = await startFakeMcpHttpServer({ bigBytes: 12_000_000, jsonResponse: true });
    parley = await startParley({
      dataDir: setup.dataDir,
      token: ADMIN,
      env: { ...setup.env, API_TOKEN: ADMIN, EMBEDDINGS_PROVIDER: 'none' },
    });
    const created = await call(ADMIN, 'POST', '/admin/mcp-servers', {
      transport: 'stdio',
      name: 'big',
      command: process.execPath,
      args: [FAKE_MCP],
      env: { FAKE_MCP_BIG_BYTES: String(12_000_000) },
      trusted: true,
    });
    expect(created.status, created.text).toBe(201);
    await call(ADMIN, 'PATCH', `/admin/mcp-servers/${created.body.id}`, { enabled: true });
    for (const [name, server] of [
      ['sse', sse],
      ['json', json],
    ] as const) {
      const added = await call(ADMIN, 'POST', '/admin/mcp-servers', {
        transport: 'http',
        name,
        url: server.url,
        trusted: true,
      });
      await call(ADMIN, 'PATCH', `/admin/mcp-servers/${added.body.id}`, { enabled: true });
    }
  }, 120_000);
  afterEach(() => llm.assertNoUnexpected());
  afterAll(async () => {
    await parley?.stop();
    await sse?.close();
    await json?.close();
    await setup?.cleanup();
  });

  it.each(['big', 'sse', 'json'])(
    'tells the model at once that the result of %s was too large, and the next call works',
    async (server) => {
      llm.enqueue(
        reply.toolCalls([{ id: `${server}-big`, name: `${server}__big`, args: {} }]),
        reply.text('Too big.'),
      );
      const started = Date.now();
      const response = await parley.fetch('/chat', {
        method: 'POST',
        token: ADMIN,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ user_id: 'default', message: 'everything please' }),
      });
      expect(parseChatStream(await response.text()).text).toBe('Too big.');

      // The call timeout is 30 s: before, the user waited it out (31-33 s here).
      expect(Date.now() - started).toBeLessThan(20_000);
      expect(toolResult(`${server}-big`)).toContain('too large');
      const line = await parley.waitForLog(
        (l) => l.msg === 'mcp tool call' && l.tool === 'big' && l.mcpServer === server,
      );
      expect(line.outcome).toBe('too_large');

      llm.enqueue(
        reply.toolCalls([{ id: `${server}-note`, name: `${server}__note`, args: { text: 'abc' } }]),
        reply.text('Noted.'),
      );
      const next = await parley.fetch('/chat', {
        method: 'POST',
        token: ADMIN,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ user_id: 'default', message: 'a note' }),
      });
      expect(parseChatStream(await next.text()).text).toBe('Noted.');
      expect(toolResult(`${server}-note`)).toBe('noted 3 chars');
    },
    60_000,
  );
});
