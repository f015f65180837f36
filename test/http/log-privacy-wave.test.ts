import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { type CallToolResult, McpError } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type BrokenMcpHttpServer,
  SECRET_BODY,
  startBrokenMcpHttpServer,
} from '../support/broken-mcp-http-server.ts';
import { readChat } from '../support/chat-stream.ts';
import { ENGINES } from '../support/engines.ts';
import { reply } from '../support/fake-llm-server.ts';
import { type FakeMcpHttpServer, startFakeMcpHttpServer } from '../support/fake-mcp-server.ts';
import type { SentMessage } from '../support/fake-telegram-server.ts';
import { jsonCaller } from '../support/json-call.ts';
import { expectNoSecrets } from '../support/log-secrets.ts';
import { holdAt, sseEvents, textOf } from '../support/resumable.ts';
import { startTelegramStack, type TelegramStack } from '../support/telegram-stack.ts';
import {
  type ListingPage,
  listedTool,
  startToolListMcpServer,
  type ToolListMcpServer,
} from '../support/tool-list-mcp-server.ts';
import { waitFor } from '../support/wait-for.ts';

/**
 * The log-privacy promise of log-privacy.test.ts, for what came later: MCP tools (Parley
 * calling them, and Parley as an MCP server), automations, Telegram and resumable runs. Every
 * user's word, tool argument and result, and every body from outside (a model's error, an MCP
 * server's answer, the Bot API's description) carries a marker, and the log at trace holds
 * none of them: only codes, statuses and configured names. Memories and the graph:
 * log-privacy-memory.test.ts.
 */
const USER = 'private-user';
/** A listing with a tool whose name models refuse and one whose schema is too large. */
const FIRST_LISTING = (): ListingPage => ({
  tools: [listedTool('fine'), listedTool('secret-listed name'), listedTool('big', 200_000)],
});
type Button = { text: string; callback_data: string };
const keyboardOf = (message: SentMessage | undefined): Button[] =>
  (
    (message?.replyMarkup as { inline_keyboard?: Button[][] } | undefined)?.inline_keyboard ?? []
  ).flat();
/** The bot's question asking to approve a tool call, among these messages. */
const approvalIn = (messages: SentMessage[]) =>
  messages.find((m) => keyboardOf(m).some((b) => b.text === 'Approve'));
const FAKE_MCP = fileURLToPath(new URL('../support/fake-mcp-server.ts', import.meta.url));
const CHAT = 7301;

describe.each(ENGINES)('the log on the %s engine, at level trace, for newer features', (engine) => {
  let stack: TelegramStack;
  let echo: FakeMcpHttpServer;
  let broken: BrokenMcpHttpServer;
  let listing: ToolListMcpServer;
  let key: string;
  const call = jsonCaller(() => stack.parley);
  const admin = () => stack.env.API_TOKEN as string;
  /** Neither our markers nor the broken MCP server's bodies were printed. */
  const expectClean = async () => {
    await stack.parley.settled();
    expectNoSecrets(stack.parley.output(), ['secret-', SECRET_BODY]);
  };
  const chat = async (message: string, extra: Record<string, unknown> = {}) =>
    stack.parley.fetch('/chat', {
      method: 'POST',
      token: key,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ message, user_id: USER, ...extra }),
    });

  beforeAll(async () => {
    echo = await startFakeMcpHttpServer({ echoTools: true });
    broken = await startBrokenMcpHttpServer();
    listing = await startToolListMcpServer(FIRST_LISTING);
    stack = await startTelegramStack(engine, {
      LOG_LEVEL: 'trace',
      LLM_CHUNK_TIMEOUT_MS: '1000',
      MCP_CALL_TIMEOUT_MS: '4000',
      MCP_CALLS_PER_ANSWER: '20',
      MCP_CREDENTIALS_KEY: Buffer.alloc(32, 7).toString('base64'),
      // A question the Bot API refused is never answered: the call is given up soon.
      MCP_APPROVAL_TIMEOUT_SECONDS: '3',
    });
    key = await stack.link(USER, CHAT);
    const servers = [
      { transport: 'http', name: 'echo', url: echo.url },
      { transport: 'http', name: 'broken', url: broken.url },
      { transport: 'http', name: 'listing', url: listing.url },
      // The echo server again, for a user's credential it refuses (echoing it) and for calls
      // that ask the user first (an untrusted server's read-only tools still ask).
      { transport: 'http', name: 'guarded', url: echo.url },
      { transport: 'http', name: 'asking', url: echo.url, trusted: false },
      // The same fake over stdio, which can also die mid-call.
      {
        transport: 'stdio',
        name: 'local',
        command: process.execPath,
        args: [FAKE_MCP],
        env: { FAKE_MCP_ECHO: '1', FAKE_MCP_API_KEY: 'secret-mcp-env-value' },
      },
    ];
    for (const server of servers) {
      const created = await call(admin(), 'POST', '/admin/mcp-servers', {
        trusted: true,
        ...server,
      });
      expect(created.status, created.text).toBe(201);
      const enabled = await call(admin(), 'PATCH', `/admin/mcp-servers/${created.body.id}`, {
        enabled: true,
      });
      expect(enabled.status, enabled.text).toBe(200);
    }
  }, 240_000);
  afterAll(async () => {
    await stack?.stop();
    await echo?.close();
    await broken?.close();
    await listing?.close();
  });

  it('holds no tool arguments, results or MCP servers’ answers after MCP tool calls', async () => {
    const text = (name: string) => ({ text: `secret-mcp-arg-${name}` });
    stack.llm.enqueue(
      reply.toolCalls([
        { name: 'echo__echo', args: text('echo') },
        { name: 'echo__fail', args: text('fail') },
        { name: 'local__echo', args: text('local-echo') },
        { name: 'local__fail', args: text('local-fail') },
        ...['rpc_error', 'http_500', 'http_502', 'html', 'not_jsonrpc', 'not_json', 'sse_cut'].map(
          (name) => ({ name: `broken__${name}`, args: text(name) }),
        ),
      ]),
      reply.text('secret-mcp-answer'),
    );
    const stream = await readChat(await chat('secret-mcp-question'));
    expect(stream.error).toBeUndefined();
    expect(stream.text).toBe('secret-mcp-answer');
    // The model was given the results (so the calls were made): the log was not.
    const results = stack.llm.chats
      .at(-1)
      ?.body.messages.filter((m) => m.role === 'tool')
      .map((m) => String(m.content));
    expect(results?.join('\n')).toContain('echo: secret-mcp-arg-echo');
    expect(results?.join('\n')).toContain('could not handle secret-mcp-arg-fail');
    expect(results?.join('\n')).toContain('echo: secret-mcp-arg-local-echo');
    // The stdio server prints garbage and its last words, and exits mid-call.
    stack.llm.enqueue(
      reply.toolCalls([{ name: 'local__crash', args: text('crash') }]),
      reply.text('secret-mcp-answer-after-crash'),
    );
    const crashed = await readChat(await chat('secret-mcp-question-crash'));
    expect(crashed.error).toBeUndefined();
    await stack.parley.waitForLog(
      (line) => line.msg === 'mcp tool call' && line.tool === 'crash' && line.outcome === 'failed',
    );
    // The administrator is shown its stderr; the log is not.
    const { servers } = (await call(admin(), 'GET', '/admin/mcp-servers')).body;
    const local = servers.find((s: { name: string }) => s.name === 'local');
    expect(JSON.stringify(local)).toContain('dying on secret-mcp-arg-crash');
    // Each call logged by server and tool, with its outcome.
    await stack.parley.waitForLog(
      (line) => line.msg === 'mcp tool call' && line.tool === 'fail' && line.mcpServer === 'echo',
    );
    await stack.parley.waitForLog(
      (line) =>
        line.msg === 'mcp tool call' && line.tool === 'rpc_error' && line.outcome === 'failed',
    );
    broken.assertNoUnexpected();
    await expectClean();
  });

  it('holds no tool definitions or listing errors of an MCP server', async () => {
    // Connected at the first chat: two of its tools are left out, logged by count.
    stack.llm.enqueue(reply.text('secret-listing-answer-1'));
    expect((await readChat(await chat('secret-listing-question-1'))).error).toBeUndefined();
    await stack.parley.waitForLog((line) => line.code === 'mcp_tools_left_out');
    // Its listing fails after it said its tools changed, the error quoting them.
    listing.listing = () => {
      throw new McpError(-32603, 'cannot list secret-listing-error');
    };
    await listing.notifyChanged();
    await stack.parley.waitForLog((line) => line.code === 'mcp_tools_stale');
    // Then lists changed definitions: held for the administrator, by fingerprint.
    listing.listing = () => ({
      tools: [{ ...listedTool('fine'), description: 'secret-listing-description' }],
    });
    await listing.notifyChanged();
    await stack.parley.waitForLog((line) => line.msg === 'mcp tool listing is fresh again');
    stack.llm.enqueue(reply.text('secret-listing-answer-2'));
    expect((await readChat(await chat('secret-listing-question-2'))).error).toBeUndefined();
    await stack.parley.waitForLog((line) => line.code === 'mcp_tools_changed');
    await expectClean();
  });

  it('holds no tool names or arguments the model made up', async () => {
    stack.llm.enqueue(
      reply.toolCalls([
        { name: 'secret-made-up-tool', args: { text: 'secret-made-up-arg' } },
        { name: 'echo__secret-made-up-tool', args: { text: 'secret-made-up-arg-2' } },
        { name: 'echo__echo', args: { text: 42, other: 'secret-made-up-arg-3' } },
        { name: 'set_reminder', args: '{"title": "secret-made-up-json' },
      ]),
      reply.text('secret-made-up-answer'),
    );
    const stream = await readChat(await chat('secret-made-up-question'));
    expect(stream.error).toBeUndefined();
    // The operator still reads which of the offered tools were used, and that others were not.
    const answered = await stack.parley.waitForLog(
      (line) => line.msg === 'chat answered' && line.unknownTools !== undefined,
    );
    expect(answered).toMatchObject({ tools: ['echo__echo', 'set_reminder'], unknownTools: 2 });
    await expectClean();
  });

  it('holds no tool arguments a /chat client is asked to approve, or its decision', async () => {
    stack.llm.enqueue(
      reply.toolCalls([{ name: 'asking__echo', args: { text: 'secret-ask-arg' } }]),
      reply.text('secret-ask-answer'),
    );
    const response = await chat('secret-ask-question', { approvals: 'ask' });
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let raw = '';
    while (!raw.includes('__approval"')) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`no approval asked: ${raw}`);
      raw += decoder.decode(value, { stream: true });
    }
    const event = raw.split('\n\n').find((e) => e.includes('__approval"')) ?? '';
    const { id } = JSON.parse(event.slice(event.indexOf('{'))).__approval as { id: string };
    const decide = (body: unknown) => call(key, 'POST', `/users/${USER}/approvals/${id}`, body);
    expect((await decide({ decision: 'secret-ask-decision' })).status).toBe(422);
    expect((await decide({ decision: 'approve' })).status).toBe(200);
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      raw += decoder.decode(value, { stream: true });
    }
    expect(raw).toContain('secret-ask-answer');
    await expectClean();
  });

  it('holds no tool arguments sent to Parley as an MCP server, valid or refused', async () => {
    const client = new Client({ name: 'log-privacy', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${stack.parley.url}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${key}` } },
      }),
    );
    try {
      const callTool = async (name: string, args: Record<string, unknown>) =>
        (await client.callTool({ name, arguments: args })) as CallToolResult;
      const valid = await callTool('set_reminder', {
        title: 'secret-mcp-in-title',
        date: '2099-01-01',
        note: 'secret-mcp-in-note',
      });
      expect(valid.isError).toBeFalsy();
      const past = await callTool('set_reminder', {
        title: 'secret-mcp-in-past',
        date: '2000-01-01',
      });
      expect(past.isError).toBe(true);
      const invalid = await callTool('set_reminder', {
        title: 'secret-mcp-in-invalid',
        date: 'secret-mcp-in-date',
      });
      expect(invalid.isError).toBe(true);
      const nul = await callTool('set_reminder', {
        title: 'secret-mcp-in-\u0000-nul',
        date: '2099-01-01',
      });
      expect(nul.isError).toBe(true);
      await callTool('search_documents', { query: 'secret-mcp-in-query' });
      await callTool('query_graph', { query: 'secret-mcp-in-graph' }).catch(() => undefined);
      // A tool that does not exist, named with the marker.
      const unknown = await callTool('secret-mcp-in-tool', { text: 'secret-mcp-in-x' }).catch(
        (error: unknown) => error,
      );
      expect(unknown).toBeDefined();
    } finally {
      await client.close();
    }
    // Not JSON-RPC, and not JSON at all.
    for (const body of [
      JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'secret-mcp-in-method', params: {} }),
      '{"jsonrpc":"2.0","id":1,"method":"initialize","params":"secret-mcp-in-json',
    ]) {
      const response = await stack.parley.fetch('/mcp', {
        method: 'POST',
        token: key,
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body,
      });
      expect(response.status).toBeGreaterThanOrEqual(200);
    }
    await expectClean();
  });

  it('holds no prompts, answers or model errors of automations, run or refused', async () => {
    const created = await call(key, 'POST', `/users/${USER}/automations`, {
      prompt: 'secret-automation-prompt',
      schedule: { type: 'daily', time: '08:00' },
    });
    expect(created.status, created.text).toBe(201);
    const id = created.body.id as string;
    const runsDone = async (count: number) => {
      await waitFor(async () => {
        const runs = (await call(key, 'GET', `/users/${USER}/automations/${id}/runs`)).body
          .runs as { status: string }[];
        const ended = ['done', 'failed', 'refused'];
        return runs.length >= count && runs.every((r) => ended.includes(r.status));
      }, 60_000);
    };
    // The model fails, its error body echoing the prompt.
    stack.llm.enqueue(reply.error(500, { message: 'echo: secret-automation-upstream' }));
    expect((await call(key, 'POST', `/users/${USER}/automations/${id}/run`)).status).toBe(202);
    await runsDone(1);
    // The model answers; Telegram refuses the result, its description echoing the text.
    const from = stack.telegram.calls.length;
    stack.telegram.failMethod('sendMessage', {
      kind: 'error',
      status: 400,
      description: 'Bad Request: secret-automation-telegram-description',
    });
    stack.llm.enqueue(reply.text('secret-automation-answer'));
    expect((await call(key, 'POST', `/users/${USER}/automations/${id}/run`)).status).toBe(202);
    await runsDone(2);
    await stack.telegram.waitFor(() =>
      stack.telegram.calls.slice(from).some((c) => c.method === 'sendMessage' && c.status === 400),
    );
    // Made by the assistant: once, then refused (a time that has passed), then listed.
    const made = (schedule: unknown) => ({
      name: 'create_automation',
      args: { prompt: 'secret-automation-tool-prompt', name: 'secret-automation-name', schedule },
    });
    stack.llm.enqueue(
      reply.toolCalls([made({ type: 'daily', time: '09:00' })]),
      reply.toolCalls([made({ type: 'once', date: '2000-01-01', time: '08:00' })]),
      reply.toolCalls([{ name: 'list_automations', args: {} }]),
      reply.text('secret-automation-tool-answer'),
    );
    expect((await readChat(await chat('secret-automation-tool-question'))).error).toBeUndefined();
    const told = stack.llm.chats
      .at(-1)
      ?.body.messages.filter((m) => m.role === 'tool')
      .map((m) => JSON.stringify(m.content));
    expect(told?.join()).toContain('has passed');
    expect(told?.join()).toContain('secret-automation-name'); // listed back to the model
    // Bad input to the routes, each carrying the marker.
    const bad: unknown[] = [
      { prompt: 'secret-automation-bad-1', schedule: { type: 'secret-automation-type' } },
      { prompt: 'secret-automation-bad-2', schedule: { type: 'daily', time: 'secret-time' } },
      {
        prompt: 'secret-automation-bad-3',
        schedule: { type: 'once', date: '2000-01-01', time: '08:00' },
      },
      { prompt: 'secret-automation-\u0000-nul', schedule: { type: 'daily', time: '08:00' } },
      {
        prompt: 'secret-automation-bad-4'.repeat(1000),
        schedule: { type: 'daily', time: '08:00' },
      },
    ];
    for (const body of bad) {
      const refused = await call(key, 'POST', `/users/${USER}/automations`, body);
      expect(refused.status, refused.text).toBeGreaterThanOrEqual(400);
    }
    const patched = await call(key, 'PATCH', `/users/${USER}/automations/${id}`, {
      prompt: 'secret-automation-patch',
      schedule: { type: 'every', hours: 'secret-automation-hours' },
    });
    expect(patched.status).toBeGreaterThanOrEqual(400);
    const notJson = await stack.parley.fetch(`/users/${USER}/automations`, {
      method: 'POST',
      token: key,
      headers: { 'content-type': 'application/json' },
      body: '{"prompt": "secret-automation-json',
    });
    expect(notJson.status).toBe(422);
    await stack.parley.waitForLog((line) => line.msg === 'automation result not sent to Telegram');
    await expectClean();
  });

  it('holds no Telegram messages, answers or Bot API descriptions', async () => {
    stack.llm.enqueue(reply.text('secret-telegram-answer'));
    const answer = await stack.ask(CHAT, 'secret-telegram-question');
    expect(answer.at(-1)?.visible).toContain('secret-telegram-answer');
    // The Bot API refuses the answer, its description quoting the text it was sent.
    const from = stack.telegram.calls.length;
    stack.telegram.failMethod('sendMessage', {
      kind: 'error',
      status: 400,
      description: 'Bad Request: secret-telegram-description',
    });
    stack.llm.enqueue(reply.text('secret-telegram-refused-answer'));
    stack.telegram.pushMessage(CHAT, 'secret-telegram-question-2');
    await stack.telegram.waitFor(() =>
      stack.telegram.calls.slice(from).some((c) => c.method === 'sendMessage' && c.status === 400),
    );
    // A button press Parley never made, and an edit of a message.
    const answered = stack.telegram.callbackAnswers.length;
    stack.telegram.pushCallback(CHAT, 1, 'secret-telegram-callback-data');
    await stack.telegram.waitFor(() => stack.telegram.callbackAnswers.length > answered);
    stack.telegram.pushEditedMessage(CHAT, 'secret-telegram-edited');
    // A model failure told in the chat.
    stack.llm.enqueue(reply.error(500, { message: 'echo: secret-telegram-upstream' }));
    const before = stack.sentSince(CHAT, 0).length;
    stack.telegram.pushMessage(CHAT, 'secret-telegram-question-3');
    await stack.telegram.waitFor(() => stack.sentSince(CHAT, before).length > 0);
    await expectClean();
  });

  it('holds no credential an MCP server refuses and echoes back', async () => {
    const { servers } = (await call(key, 'GET', `/users/${USER}/mcp-servers`)).body;
    const guarded = servers.find((s: { name: string }) => s.name === 'guarded');
    const stored = await call(key, 'PUT', `/users/${USER}/mcp-servers/${guarded.id}`, {
      credential: { header: 'Authorization', value: 'Bearer secret-mcp-credential-revoked' },
    });
    expect(stored.status, stored.text).toBe(200);
    stack.llm.enqueue(
      reply.toolCalls([{ name: 'guarded__echo', args: { text: 'secret-mcp-arg-guarded' } }]),
      reply.text('secret-mcp-answer-guarded'),
    );
    const refused = await call(key, 'PUT', `/users/${USER}/mcp-servers/${guarded.id}`, {
      credential: { header: 'secret-mcp-header\n', value: 'secret-mcp-credential-bad\n' },
    });
    expect(refused.status).toBeGreaterThanOrEqual(400);
    const stream = await readChat(await chat('secret-mcp-question-guarded'));
    expect(stream.error).toBeUndefined();
    // Left out of this user's chat, as refused: the fake echoed the credential in its 401's body.
    expect(echo.requests.some((r) => r.authorization?.includes('secret-mcp-credential'))).toBe(
      true,
    );
    await stack.parley.waitForLog(
      (line) => line.code === 'mcp_user_refused' && line.mcpServer === 'guarded',
    );
    await expectClean();
  });

  it('holds no tool arguments shown for approval on Telegram, or the Bot API refusing them', async () => {
    const from = stack.sentSince(CHAT, 0).length;
    stack.llm.enqueue(
      reply.toolCalls([
        { id: 'approved', name: 'asking__echo', args: { text: 'secret-approval-arg-1' } },
      ]),
      reply.text('secret-approval-answer-1'),
    );
    stack.telegram.pushMessage(CHAT, 'secret-approval-question-1');
    await stack.telegram.waitFor(
      () => approvalIn(stack.sentSince(CHAT, from)) !== undefined,
      60_000,
    );
    const question = approvalIn(stack.sentSince(CHAT, from));
    expect(question?.visible).toContain('secret-approval-arg-1');
    const approve = keyboardOf(question).find((b) => b.text === 'Approve');
    const answered = stack.telegram.callbackAnswers.length;
    stack.telegram.pushCallback(CHAT, question?.messageId ?? 0, approve?.callback_data ?? '');
    await stack.telegram.waitFor(() => stack.telegram.callbackAnswers.length > answered);
    await stack.telegram.waitFor(
      () =>
        stack
          .sentSince(CHAT, from)
          .some((m) => [m.visible, ...m.edits].some((t) => t.includes('secret-approval-answer-1'))),
      60_000,
    );

    // The question itself refused, its description quoting the arguments.
    const calls = stack.telegram.calls.length;
    stack.telegram.failMethod('sendMessage', {
      kind: 'error',
      status: 400,
      description: 'Bad Request: secret-approval-telegram-description',
    });
    stack.llm.enqueue(
      reply.toolCalls([{ name: 'asking__echo', args: { text: 'secret-approval-arg-2' } }]),
      reply.text('secret-approval-answer-2'),
    );
    stack.telegram.pushMessage(CHAT, 'secret-approval-question-2');
    await stack.telegram.waitFor(() =>
      stack.telegram.calls.slice(calls).some((c) => c.method === 'sendMessage' && c.status === 400),
    );
    await waitFor(
      () =>
        stack.llm.chats.some(
          (c) =>
            JSON.stringify(c.body).includes('secret-approval-arg-2') &&
            c.body.messages.some((m) => m.role === 'tool'),
        ),
      60_000,
    );
    await expectClean();
  });

  it('holds no documents sent on Telegram, their names or the Bot API refusing the reply', async () => {
    const say = async (fields: Record<string, unknown>, fault?: string) => {
      const calls = stack.telegram.calls.length;
      if (fault) {
        stack.telegram.failMethod('sendMessage', {
          kind: 'error',
          status: 400,
          description: `Bad Request: ${fault}`,
        });
      }
      const from = stack.sentSince(CHAT, 0).length;
      stack.telegram.pushUpdateMessage(CHAT, fields);
      await stack.telegram.waitFor(
        () =>
          stack.telegram.calls
            .slice(calls)
            .some((c) => c.method === 'sendMessage' && (fault ? c.status === 400 : true)) &&
          (fault !== undefined || stack.sentSince(CHAT, from).length > 0),
        60_000,
      );
    };
    const text = stack.telegram.addFile(Buffer.from('secret-telegram-document-text'), 'txt');
    await say({
      caption: 'secret-telegram-caption',
      document: {
        file_id: text.fileId,
        file_unique_id: 'secret-1',
        file_name: 'secret-telegram-file.txt',
        mime_type: 'text/plain',
        file_size: text.size,
      },
    });
    const again = stack.telegram.addFile(Buffer.from('secret-telegram-document-2'), 'txt');
    await say(
      {
        document: {
          file_id: again.fileId,
          file_unique_id: 'secret-2',
          file_name: 'secret-telegram-file-2.txt',
          mime_type: 'text/plain',
          file_size: again.size,
        },
      },
      'secret-telegram-document-description',
    );
    // Not a document Parley reads: refused, by its name.
    const binary = stack.telegram.addFile(Buffer.from([0, 1, 2, 3, 0xff, 0xfe]), 'bin');
    await say({
      document: {
        file_id: binary.fileId,
        file_unique_id: 'secret-3',
        file_name: 'secret-telegram-file-3.exe',
        file_size: binary.size,
      },
    });
    await expectClean();
  });

  it('holds no partial answers of resumable runs that fail or are stopped', async () => {
    /** A resumable answer's events (with their ids), read to the end; its error's code. */
    const errorOf = async (response: Response) =>
      sseEvents(await response.text())
        .map((event) => JSON.parse(event.data === '[DONE]' ? 'null' : event.data))
        .find((data) => data?.__error)?.__error.code;
    stack.llm.enqueue(reply.text('secret-resumable-cut-x', { chunks: 4, disconnectAfter: 2 }));
    const cut = await chat('secret-resumable-question-1', { resumable: true });
    expect(await errorOf(cut)).toBe('model_unreachable');
    stack.llm.enqueue(reply.error(500, { message: 'echo: secret-resumable-upstream' }));
    const failed = await chat('secret-resumable-question-2', { resumable: true });
    expect(await errorOf(failed)).toBe('model_error');

    const runOf = cut.headers.get('x-parley-run-id') as string;
    for (const lastEventId of ['secret-resumable-event-id', '999999']) {
      const resumed = await stack.parley.fetch(`/users/${USER}/runs/${runOf}/events`, {
        token: key,
        headers: { 'last-event-id': lastEventId },
      });
      expect(resumed.status).toBe(422);
    }
    const hold = holdAt((chunk) => chunk === 2);
    stack.llm.enqueue(
      reply.text('secret-resumable-stopped-answer', { chunks: 6, pace: hold.pace }),
    );
    const response = await chat('secret-resumable-question-3', { resumable: true });
    const runId = response.headers.get('x-parley-run-id') as string;
    await hold.reached;
    const stopped = await stack.parley.fetch(`/users/${USER}/runs/${runId}/stop`, {
      method: 'POST',
      token: key,
    });
    expect(stopped.status).toBe(200);
    const events = sseEvents(await response.text());
    hold.release();
    expect(textOf(events)).not.toBe('secret-resumable-stopped-answer');
    await expectClean();
  });
});
