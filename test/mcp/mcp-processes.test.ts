import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { parseChatStream } from '../support/chat-stream.ts';
import { type EngineSetup, engineSetup } from '../support/engine-setup.ts';
import { ENGINES } from '../support/engines.ts';
import { type FakeLlmServer, reply } from '../support/fake-llm-server.ts';
import { jsonCaller } from '../support/json-call.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';

/**
 * A stdio server started through a wrapper (as `npx` does) leaves its real process a
 * grandchild of Parley's, which here outlives the end of its stdin: each server runs in its own process group, so disabling it, and
 * stopping Parley, ends the wrapper and the server under it.
 */
const FAKE_MCP = fileURLToPath(new URL('../support/fake-mcp-server.ts', import.meta.url));
const ADMIN = 'mcp-processes-admin-token';
const WRAPPER = `const { spawn } = require('node:child_process');
const child = spawn(process.execPath, [${JSON.stringify(FAKE_MCP)}], { stdio: 'inherit' });
child.on('exit', (code) => process.exit(code ?? 1));`;

/** Running: a zombie (ended, not yet reaped by whoever adopted it) counts as ended. */
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'));
  } catch {
    return false;
  }
};

describe.each(ENGINES)('stdio MCP server processes on the %s engine', (engine) => {
  let llm: FakeLlmServer;
  let setup: EngineSetup;
  let parley: RunningParley;
  const call = jsonCaller(() => parley);
  afterAll(async () => {
    await parley?.stop();
    await setup?.cleanup();
  });

  it('ends a wrapped server with its wrapper when disabled and at shutdown', async () => {
    setup = await engineSetup(engine);
    llm = setup.llm;
    parley = await startParley({
      dataDir: setup.dataDir,
      token: ADMIN,
      env: {
        ...setup.env,
        API_TOKEN: ADMIN,
        EMBEDDINGS_PROVIDER: 'none',
      },
    });
    const dir = mkdtempSync(join(tmpdir(), 'parley-mcp-pids-'));
    const pidFile = join(dir, 'server.pid');
    const created = await call(ADMIN, 'POST', '/admin/mcp-servers', {
      transport: 'stdio',
      name: 'wrapped',
      command: process.execPath,
      args: ['-e', WRAPPER],
      env: { FAKE_MCP_PID_FILE: pidFile, FAKE_MCP_LINGER: '1' },
      trusted: true,
    });
    expect(created.status, created.text).toBe(201);
    await call(ADMIN, 'PATCH', `/admin/mcp-servers/${created.body.id}`, { enabled: true });

    const started = async () => {
      llm.enqueue(reply.toolCalls([{ name: 'wrapped__whoami', args: {} }]), reply.text('Ok.'));
      const answer = parseChatStream(
        await (
          await parley.fetch('/chat', {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ message: 'who' }),
          })
        ).text(),
      );
      expect(answer.text).toBe('Ok.');
      const wrapper = parley.logs.filter((l) => l.msg === 'mcp server connected').at(-1)
        ?.pid as number;
      const server = Number(readFileSync(pidFile, 'utf8'));
      expect(alive(wrapper) && alive(server)).toBe(true);
      return { wrapper, server };
    };

    const first = await started();
    await call(ADMIN, 'PATCH', `/admin/mcp-servers/${created.body.id}`, { enabled: false });
    await expect.poll(() => alive(first.wrapper) || alive(first.server)).toBe(false);

    await call(ADMIN, 'PATCH', `/admin/mcp-servers/${created.body.id}`, { enabled: true });
    const second = await started();
    expect(second.server).not.toBe(first.server);
    expect(await parley.stop()).toBe(0);
    expect(alive(second.wrapper)).toBe(false);
    expect(alive(second.server)).toBe(false);
    expect(existsSync(pidFile)).toBe(true);
  });
});
