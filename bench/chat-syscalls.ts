/**
 * The system calls of the server process while it answers chats (strace -c, every thread),
 * for one checkout: a count that machine load does not move, unlike CPU time.
 *
 *   node bench/chat-syscalls.ts [checkoutDir (default: this one)] [chats=200] [out=/tmp/strace.txt]
 *
 * The server starts as bench/support/parley.ts starts it (embedded engine,
 * CONVERSATION_TITLES=question), answers 60 warm-up chats of 1 token from 20 users, then
 * strace is attached for `chats` more, one at a time, from the same users. STRACE_ARGS
 * replaces `-c` (e.g. '-e trace=write -y' to see which files and sockets are written).
 */
import { spawn } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import { startFakeLlm } from './support/fake-llm.ts';
import { startServer } from './support/parley.ts';
import { chat, succeeded } from './support/sse-client.ts';
import { sleep } from './support/stats.ts';

const [dir, n = '200', out = '/tmp/strace.txt'] = process.argv.slice(2);
const fake = await startFakeLlm({ tokens: 1, delayMs: 0 });
const server = await startServer({
  root: dir ? pathToFileURL(`${dir}/`) : undefined,
  env: { LLM_BASE_URL: fake.url, CONVERSATION_TITLES: 'question' },
});
for (let i = 0; i < 60; i++) await chat(server.url, `p-${i % 20}`);
const st = spawn(
  'strace',
  [...(process.env.STRACE_ARGS ?? '-c').split(' '), '-f', '-o', out, '-p', String(server.pid)],
  { stdio: 'inherit' },
);
await sleep(1500);
for (let i = 0; i < Number(n); i++)
  if (!succeeded(await chat(server.url, `p-${i % 20}`))) throw new Error('chat');
await sleep(500);
st.kill('SIGINT');
await new Promise((r) => st.once('exit', r));
await server.stop();
await fake.close();
