import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  type BrokenMcpHttpServer,
  type Ending,
  SECRET_BODY,
  startBrokenMcpHttpServer,
} from '../support/broken-mcp-http-server.ts';
import { parseChatStream } from '../support/chat-stream.ts';
import { type EngineSetup, engineSetup } from '../support/engine-setup.ts';
import { ENGINES } from '../support/engines.ts';
import { type FakeLlmServer, reply } from '../support/fake-llm-server.ts';
import { type Json, jsonCaller } from '../support/json-call.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';

/**
 * How an MCP server reached over Streamable HTTP can end a tool call badly, and what the
 * user sees: the chat still ends with the model's answer (the model told the tool failed, in
 * Parley's words, never the server's body and never half a result as if whole), no hang past
 * the call timeout, the administrator's view up to date, the log carrying codes, and the
 * next call working. The server is a raw fake speaking the wire protocol
 * (test/support/broken-mcp-http-server.ts); the model is the fake LLM server.
 */

const ADMIN = 'mcp-http-endings-admin';
const CALL_TIMEOUT_MS = 4_000;

function toolResult(llm: FakeLlmServer, id: string): string | undefined {
  for (const chat of llm.chats) {
    for (const message of chat.body.messages) {
      if (message.role === 'tool' && message.tool_call_id === id) return String(message.content);
    }
  }
  return undefined;
}

describe.each(ENGINES)(
  'an MCP server over HTTP ending a call badly, on the %s engine',
  (engine) => {
    let llm: FakeLlmServer;
    let mcp: BrokenMcpHttpServer;
    let setup: EngineSetup;
    let parley: RunningParley;
    let key: string;
    let serverId: string;
    const call = jsonCaller(() => parley);

    beforeAll(async () => {
      setup = await engineSetup(engine);
      llm = setup.llm;
      mcp = await startBrokenMcpHttpServer();
      parley = await startParley({
        dataDir: setup.dataDir,
        token: ADMIN,
        env: {
          ...setup.env,
          API_TOKEN: ADMIN,
          EMBEDDINGS_PROVIDER: 'none',
          MCP_CALL_TIMEOUT_MS: String(CALL_TIMEOUT_MS),
          MCP_CALL_MAX_MS: '20000',
          MCP_CALLS_PER_ANSWER: '20',
        },
      });
      key = (await call(ADMIN, 'POST', '/admin/users', { user_id: 'ann' })).body.key;
      const created = await call(ADMIN, 'POST', '/admin/mcp-servers', {
        transport: 'http',
        name: 'broken',
        url: mcp.url,
        trusted: true,
      });
      expect(created.status, created.text).toBe(201);
      serverId = created.body.id;
      await call(ADMIN, 'PATCH', `/admin/mcp-servers/${serverId}`, { enabled: true });
    }, 120_000);
    afterEach(() => {
      mcp.assertNoUnexpected();
      llm.assertNoUnexpected();
    });
    afterAll(async () => {
      await parley?.stop();
      await mcp?.close();
      await setup?.cleanup();
    });

    /** One chat where the model calls these tools at once, then answers; what came back. */
    const chatCalling = async (endings: Ending[]) => {
      const tag = `${llm.chats.length}`;
      llm.enqueue(
        reply.toolCalls(
          endings.map((name) => ({ id: `${name}-${tag}`, name: `broken__${name}`, args: {} })),
        ),
        reply.text('Went on.'),
      );
      const started = Date.now();
      const response = await parley.fetch('/chat', {
        method: 'POST',
        token: key,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ user_id: 'ann', message: `call ${endings.join(', ')}` }),
      });
      expect(response.status).toBe(200);
      const stream = parseChatStream(await response.text());
      const results = Object.fromEntries(
        endings.map((name) => [name, toolResult(llm, `${name}-${tag}`) ?? '(none)']),
      ) as Record<Ending, string>;
      return { stream, results, ms: Date.now() - started };
    };
    const status = async () =>
      (await call(ADMIN, 'GET', '/admin/mcp-servers')).body.servers.find(
        (s: Json) => s.id === serverId,
      ).status;
    const expectHealthyAgain = async () => {
      const { stream, results } = await chatCalling(['ok']);
      expect(stream.text).toBe('Went on.');
      expect(results.ok).toBe('the whole answer of ok');
      expect((await status()).state).toBe('up');
    };

    it('tells the model at once when the answer is an HTTP error, not JSON-RPC, a JSON-RPC error or a cut', async () => {
      const failing: Ending[] = [
        'http_500',
        'http_502',
        'http_503',
        'html',
        'not_jsonrpc',
        'not_json',
        'rpc_error',
        'cut_before',
        'json_cut',
      ];
      const { stream, results, ms } = await chatCalling(failing);
      expect(stream.error).toBeUndefined();
      expect(stream.ended).toBe(true);
      expect(stream.text).toBe('Went on.');
      for (const name of failing) {
        expect(results[name], name).toContain('The MCP server broken failed during the call');
        expect(results[name], name).not.toContain(SECRET_BODY);
        expect(results[name], name).not.toContain('whole answer');
      }
      expect(ms).toBeLessThan(CALL_TIMEOUT_MS);
      await parley.settled();
      const lines = parley.logs.filter((l) => l.msg === 'mcp tool call');
      for (const name of failing) {
        expect(lines.find((l) => l.tool === name)?.outcome, name).toBe('failed');
      }
      expect(parley.output()).not.toContain(SECRET_BODY);
      await expectHealthyAgain();
    });

    it('tells the model when an SSE answer ends before its result, without waiting for the timeout', async () => {
      const failing: Ending[] = ['sse_cut', 'sse_end', 'sse_empty'];
      const { stream, results, ms } = await chatCalling(failing);
      expect(stream.error).toBeUndefined();
      expect(stream.text).toBe('Went on.');
      for (const name of failing) {
        expect(results[name], name).toContain('The MCP server broken failed during the call');
        expect(results[name], name).not.toContain('whole answer');
      }
      expect(ms).toBeLessThan(CALL_TIMEOUT_MS);
      await expectHealthyAgain();
    });

    it('takes an answer trickled within the timeout, and gives up on one trickled past it', async () => {
      mcp.pieceMs = 700; // 3 pieces: 1.4 s; 8 pieces: 4.9 s, past the 4 s timeout
      const { stream, results, ms } = await chatCalling(['trickle', 'trickle_slow']);
      expect(stream.text).toBe('Went on.');
      expect(results.trickle).toBe('the whole answer of trickle');
      expect(results.trickle_slow).toContain('The MCP server broken did not answer in time');
      expect(results.trickle_slow).not.toContain('whole answer');
      expect(ms).toBeLessThan(CALL_TIMEOUT_MS + 3_000);
      const line = await parley.waitForLog(
        (l) => l.msg === 'mcp tool call' && l.tool === 'trickle_slow',
      );
      expect(line.outcome).toBe('timeout');
      await expectHealthyAgain();
    });

    it('starts a new session when the server answers 404 to the one it had (session expired)', async () => {
      await expectHealthyAgain(); // a session to lose
      const before = mcp.sessions.length;
      mcp.forgetSessions();
      // Two calls at once, both answered 404: one new session, both calls run again on it.
      const from = mcp.calls.length;
      const { stream, results } = await chatCalling(['ok', 'trickle']);
      expect(stream.text).toBe('Went on.');
      expect(results.ok).toBe('the whole answer of ok');
      expect(results.trickle).toBe('the whole answer of trickle');
      expect(mcp.sessions.length).toBe(before + 1);
      const retried = mcp.calls.slice(from).filter((c) => c.session === mcp.sessions.at(-1));
      expect(retried.map((c) => c.name).sort()).toEqual(['ok', 'trickle']);
      await expectHealthyAgain();
    });
  },
);
