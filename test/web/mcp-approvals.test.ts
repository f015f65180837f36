import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EngineSetup, engineSetup } from '../support/engine-setup.ts';
import { ENGINES } from '../support/engines.ts';
import { type FakeLlmServer, reply } from '../support/fake-llm-server.ts';
import { startFakeMcpHttpServer } from '../support/fake-mcp-server.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';
import { englishContext, holdResponses, launchChromium, signIn } from './browser.ts';

const TOKEN = 'browser-mcp-admin-token';
const EVERYTHING = fileURLToPath(
  import.meta.resolve('@modelcontextprotocol/server-everything/dist/index.js'),
);

/**
 * A tool call that needs the user's decision, in the web client (issue 33): a real Chromium,
 * a real Parley with the reference MCP server (untrusted, so every call asks), the fake model.
 * The page shows the tool, the server and the arguments with "Approve", "Deny" and "Always
 * allow"; the model is sent what the user chose.
 */
describe.each(ENGINES)('MCP approvals in the web client, on the %s engine', (engine) => {
  let setup: EngineSetup;
  let llm: FakeLlmServer;
  let parley: RunningParley;
  let browser: Browser;
  let page: Page;
  let aliceKey: string;

  const admin = (method: string, path: string, body?: unknown) =>
    parley.fetch(path, {
      method,
      headers: { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });

  beforeAll(async () => {
    browser = await launchChromium();
    setup = await engineSetup(engine, { API_TOKEN: TOKEN, MCP_CREDENTIALS_KEY: 'b'.repeat(64) });
    llm = setup.llm;
    parley = await startParley({ dataDir: setup.dataDir, token: TOKEN, env: setup.env });
    const { key } = (await (await admin('POST', '/admin/users', { user_id: 'alice' })).json()) as {
      key: string;
    };
    aliceKey = key;
    const server = (await (
      await admin('POST', '/admin/mcp-servers', {
        transport: 'stdio',
        name: 'everything',
        command: process.execPath,
        args: [EVERYTHING, 'stdio'],
      })
    ).json()) as { id: string };
    expect(
      (await admin('PATCH', `/admin/mcp-servers/${server.id}`, { enabled: true })).status,
    ).toBe(200);
    const context = await englishContext(browser);
    page = await context.newPage();
    await signIn(page, parley.url, key);
  });
  afterAll(async () => {
    await browser?.close();
    await parley?.stop();
    await setup?.cleanup();
  });

  /** The answer's stream has ended (the page sends nothing while one streams). */
  const answered = async (text: string) => {
    await page.getByText(text).waitFor({ timeout: 30_000 });
    await page.locator('.bubble.assistant[aria-busy="true"]').waitFor({ state: 'detached' });
  };
  const ask = async (text: string) => {
    const box = page.getByRole('textbox', { name: 'Message' });
    await box.fill(text);
    await box.press('Enter');
  };
  const toolResult = (id: string) =>
    llm.chats
      .flatMap((chat) => chat.body.messages)
      .find((m) => m.role === 'tool' && m.tool_call_id === id)?.content;

  it('shows the call with its arguments and runs it only once approved', async () => {
    llm.enqueue(
      reply.toolCalls([{ id: 'sum', name: 'everything__get-sum', args: { a: 4, b: 5 } }]),
      reply.text('It is nine.'),
    );
    await ask('What is 4 + 5?');
    const card = page.getByRole('region', {
      name: 'Run the tool get-sum of everything with these arguments?',
    });
    await card.waitFor({ timeout: 30_000 });
    expect(await card.locator('pre').textContent()).toBe(JSON.stringify({ a: 4, b: 5 }, null, 2));
    expect(toolResult('sum')).toBeUndefined(); // nothing ran yet
    await card.getByRole('button', { name: 'Approve' }).click();
    await answered('It is nine.');
    await expect.poll(() => card.getByRole('status').textContent()).toBe('Approved.');
    expect(toolResult('sum')).toBe('The sum of 4 and 5 is 9.');
  });

  it('does not run a denied call, and the model is told so', async () => {
    llm.enqueue(
      reply.toolCalls([{ id: 'echo', name: 'everything__echo', args: { message: 'private' } }]),
      reply.text('I did not echo it.'),
    );
    await ask('Echo this');
    const card = page.getByRole('region', {
      name: 'Run the tool echo of everything with these arguments?',
    });
    await card.waitFor({ timeout: 30_000 });
    await card.getByRole('button', { name: 'Deny' }).click();
    await answered('I did not echo it.');
    expect(toolResult('echo')).toBe('Not run: the user denied this call.');
    expect(await card.getByRole('status').textContent()).toBe('Denied: the tool was not run.');
  });

  it('"Always allow" runs this call and the next ones without asking', async () => {
    llm.enqueue(
      reply.toolCalls([{ id: 'img', name: 'everything__get-tiny-image', args: {} }]),
      reply.text('Here is the image.'),
    );
    await ask('An image');
    const card = page.getByRole('region', {
      name: 'Run the tool get-tiny-image of everything with these arguments?',
    });
    await card.getByRole('button', { name: 'Always allow' }).click();
    await answered('Here is the image.');
    llm.enqueue(
      reply.toolCalls([{ id: 'img2', name: 'everything__get-tiny-image', args: {} }]),
      reply.text('Again, without asking.'),
    );
    const cards = await page.locator('.approval').count();
    await ask('Another image');
    await answered('Again, without asking.');
    expect(await page.locator('.approval').count()).toBe(cards);
    expect(String(toolResult('img2'))).toContain('[image image/png');
  });

  /** The card of a tool call asked about, once shown. */
  const asked = async (tool: string) => {
    const card = page.getByRole('region', {
      name: `Run the tool ${tool} of everything with these arguments?`,
    });
    await card.last().waitFor({ timeout: 30_000 });
    return card.last();
  };
  /** Asks, and resolves with the card of the tool call that this question asked about. */
  const askAbout = async (text: string, tool: string) => {
    const before = await page.locator('.approval').count();
    await ask(text);
    await expect
      .poll(() => page.locator('.approval').count(), { timeout: 30_000 })
      .toBe(before + 1);
    return asked(tool);
  };
  const DECISIONS = /\/users\/alice\/approvals\//;

  it('says a decision that could not be sent, keeps the buttons, and sends it again', async () => {
    llm.enqueue(
      reply.toolCalls([{ id: 'sum-lost', name: 'everything__get-sum', args: { a: 1, b: 2 } }]),
      reply.text('It is three.'),
    );
    const card = await askAbout('What is 1 + 2?', 'get-sum');
    // The connection drops as the decision is sent.
    await page.route(DECISIONS, (route) => route.abort('internetdisconnected'), { times: 1 });
    await card.getByRole('button', { name: 'Approve' }).click();
    const alert = card.getByRole('alert');
    await expect
      .poll(() => alert.textContent(), { timeout: 10_000 })
      .toContain('Your decision was not sent: the server could not be reached.');
    expect(await card.getByRole('button', { name: 'Approve' }).isEnabled()).toBe(true);
    expect(toolResult('sum-lost')).toBeUndefined();
    // The server is out of service the next time.
    await page.route(DECISIONS, (route) => route.fulfill({ status: 503 }), { times: 1 });
    await card.getByRole('button', { name: 'Deny' }).click();
    await expect
      .poll(() => alert.textContent(), { timeout: 10_000 })
      .toContain('Your decision was not sent: HTTP 503');
    expect(await card.getByRole('button', { name: 'Deny' }).isEnabled()).toBe(true);
    // Pressed again, it is taken: the alert goes.
    await card.getByRole('button', { name: 'Approve' }).click();
    await answered('It is three.');
    await expect.poll(() => card.getByRole('status').textContent()).toBe('Approved.');
    expect(await card.getByRole('alert').count()).toBe(0);
    expect(toolResult('sum-lost')).toBe('The sum of 1 and 2 is 3.');
  });

  it('"Try again" sends the same decision again', async () => {
    llm.enqueue(
      reply.toolCalls([{ id: 'echo-retry', name: 'everything__echo', args: { message: 'x' } }]),
      reply.text('Not echoed again.'),
    );
    const card = await askAbout('Echo x', 'echo');
    await page.route(DECISIONS, (route) => route.fulfill({ status: 503 }), { times: 1 });
    await card.getByRole('button', { name: 'Deny' }).click();
    await card.getByRole('alert').waitFor({ timeout: 10_000 });
    await card.getByRole('button', { name: 'Try again' }).click();
    await answered('Not echoed again.');
    expect(await card.getByRole('status').textContent()).toBe('Denied: the tool was not run.');
    expect(toolResult('echo-retry')).toBe('Not run: the user denied this call.');
  });

  it('says that a decision came too late, in words', async () => {
    llm.enqueue(
      // Only the call: the answer is stopped before the model would be asked again.
      reply.toolCalls([{ id: 'sum-late', name: 'everything__get-sum', args: { a: 2, b: 2 } }]),
    );
    const card = await askAbout('What is 2 + 2?', 'get-sum');
    // The answer is stopped while the question waits: no one waits for the decision any more.
    await page.getByRole('button', { name: 'Stop' }).click();
    await page.getByText('Stopped: the answer is incomplete.').last().waitFor({ timeout: 30_000 });
    await card.getByRole('button', { name: 'Approve' }).click();
    await expect
      .poll(() => card.getByRole('status').textContent(), { timeout: 10_000 })
      .toBe('Not answered in time: the tool was not run.');
    expect(toolResult('sum-late')).toBeUndefined();
  });

  it('says that a tool call no longer waits when the server does not know it', async () => {
    llm.enqueue(
      reply.toolCalls([{ id: 'sum-gone', name: 'everything__get-sum', args: { a: 3, b: 3 } }]),
      reply.text('It is six.'),
    );
    const card = await askAbout('What is 3 + 3?', 'get-sum');
    // The decision reaches the real server about a tool call it does not know (404).
    await page.route(
      DECISIONS,
      (route) =>
        route.continue({
          url: route
            .request()
            .url()
            .replace(/approvals\/[^/]+$/, 'approvals/00000000-0000-4000-8000-000000000000'),
        }),
      { times: 1 },
    );
    await card.getByRole('button', { name: 'Approve' }).click();
    await expect
      .poll(() => card.getByRole('alert').textContent(), { timeout: 10_000 })
      .toContain(
        'Your decision was not sent: this tool call no longer waits for a decision (its answer is gone).',
      );
    await card.getByRole('button', { name: 'Approve' }).click();
    await answered('It is six.');
    expect(toolResult('sum-gone')).toBe('The sum of 3 and 3 is 6.');
  });

  it('says so in Korean to a Korean browser', async () => {
    const context = await browser.newContext({ locale: 'ko-KR' });
    try {
      const korean = await context.newPage();
      await korean.goto(parley.url);
      await korean.getByLabel('API 키').fill(aliceKey);
      await korean.getByRole('button', { name: '로그인' }).click();
      llm.enqueue(
        reply.toolCalls([{ id: 'sum-ko', name: 'everything__get-sum', args: { a: 5, b: 5 } }]),
        reply.text('십입니다.'),
      );
      const box = korean.getByRole('textbox', { name: '메시지' });
      await box.fill('5 + 5?');
      await box.press('Enter');
      const card = korean.getByRole('region', {
        name: 'everything의 도구 get-sum을(를) 이 인자로 실행할까요?',
      });
      await card.waitFor({ timeout: 30_000 });
      await korean.route(DECISIONS, (route) => route.abort('internetdisconnected'), { times: 1 });
      await card.getByRole('button', { name: '승인' }).click();
      await expect
        .poll(() => card.getByRole('alert').textContent(), { timeout: 10_000 })
        .toContain('결정을 보내지 못했습니다: 서버에 연결할 수 없습니다.');
      await card.getByRole('button', { name: '다시 시도' }).click();
      await expect
        .poll(() => card.getByRole('status').textContent(), { timeout: 30_000 })
        .toBe('승인했습니다.');
      await korean.getByText('십입니다.').waitFor({ timeout: 30_000 });
    } finally {
      await context.close();
    }
  });

  it("switches a server off and on, and stores the user's token without showing it again", async () => {
    // What the page saves reaches the server after its request, delayed by up to a few seconds
    // on a slow network (PARLEY_TEST_WEB_LATENCY_MS): more than expect.poll's one second.
    const SAVED = { timeout: 10_000 };
    const remote = (await (
      await admin('POST', '/admin/mcp-servers', {
        transport: 'http',
        name: 'remote',
        url: 'http://127.0.0.1:9/mcp',
      })
    ).json()) as { id: string };
    await admin('PATCH', `/admin/mcp-servers/${remote.id}`, { enabled: true });
    const mine = async () =>
      (
        (await (await admin('GET', '/users/alice/mcp-servers')).json()) as {
          servers: { name: string; enabled: boolean; has_credential: boolean }[];
        }
      ).servers;
    await page.getByRole('link', { name: 'Profile' }).click();
    const use = page.getByRole('checkbox', { name: 'Use everything' });
    expect(await use.isChecked()).toBe(true);
    // The list is loaded again after each change; on a slow network that takes a while, and
    // meanwhile the box must show what was chosen. Its loads are held back here.
    const LIST = /\/users\/alice\/mcp-servers$/;
    const held = await holdResponses(page, LIST);
    try {
      await use.click();
      await expect
        .poll(async () => (await mine()).find((s) => s.name === 'everything')?.enabled, SAVED)
        .toBe(false);
      await page.getByText('Saved.').waitFor();
      expect(await use.isChecked()).toBe(false);
    } finally {
      await held.release();
    }
    // Off: its tools are not offered.
    llm.enqueue(reply.text('No tools.'));
    const before = llm.chats.length;
    await (
      await parley.fetch('/chat', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ user_id: 'alice', message: 'tools?' }),
      })
    ).text();
    const offered = (llm.chats[before]?.body.tools ?? []).map((tool) => tool.function.name);
    expect(offered.some((name) => name.startsWith('everything__'))).toBe(false);
    await page.getByRole('checkbox', { name: 'Use everything' }).click();
    await expect
      .poll(async () => (await mine()).find((s) => s.name === 'everything')?.enabled, SAVED)
      .toBe(true);

    const token = page.getByLabel('Your token for remote (e.g. Bearer …)');
    await token.fill('Bearer typed-in-the-page');
    await page.getByRole('button', { name: 'Save' }).last().click();
    await expect
      .poll(async () => (await mine()).find((s) => s.name === 'remote')?.has_credential, SAVED)
      .toBe(true);
    await page.getByRole('button', { name: 'Remove token' }).waitFor();
    expect(await token.inputValue()).toBe('');
    expect(await page.content()).not.toContain('typed-in-the-page');
    await page.getByRole('button', { name: 'Remove token' }).click();
    await expect
      .poll(async () => (await mine()).find((s) => s.name === 'remote')?.has_credential, SAVED)
      .toBe(false);
  });

  it('tells the user that a server refused their token, and why', async () => {
    const strict = await startFakeMcpHttpServer();
    try {
      const server = (await (
        await admin('POST', '/admin/mcp-servers', {
          transport: 'http',
          name: 'strict',
          url: strict.url,
        })
      ).json()) as { id: string };
      await admin('PATCH', `/admin/mcp-servers/${server.id}`, { enabled: true });
      await page.getByRole('link', { name: 'Chat' }).click();
      await page.getByRole('link', { name: 'Profile' }).click();
      const token = page.getByLabel('Your token for strict (e.g. Bearer …)');
      await token.fill('Bearer typed-but-revoked'); // the fake refuses tokens ending so
      await page.getByRole('button', { name: 'Save' }).last().click();
      await page.getByRole('button', { name: 'Remove token' }).last().waitFor();
      // Nothing is said before the server was asked.
      expect(await page.getByText('It refused you').count()).toBe(0);
      llm.enqueue(reply.text('Without strict.'));
      await (
        await parley.fetch('/chat', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ user_id: 'alice', message: 'anything?' }),
        })
      ).text();
      await page.getByRole('link', { name: 'Chat' }).click();
      await page.getByRole('link', { name: 'Profile' }).click();
      await page
        .getByText(
          'It refused you the last time (the server answered HTTP 401): none of its tools are offered until you store a token it takes.',
        )
        .waitFor({ timeout: 10_000 });
    } finally {
      await strict.close();
    }
  });
});
