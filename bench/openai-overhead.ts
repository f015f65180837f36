/**
 * What the OpenAI-compatible door costs over `/chat` (issue 23: at most 1 ms per completion
 * and 10 µs per streamed token of server CPU): one server, one fake model, alternating rounds
 * of `PARALLEL` requests through each door. Each round: one-token answers (the fixed cost),
 * then paced answers of `tokens` (the per-token cost is their difference). Streamed
 * completions ask for `include_usage`, as most clients do; a round of non-streamed
 * one-token completions is measured too.
 *
 * Why alternating rounds on one server: this machine's speed drifts within minutes, so two
 * runs one after the other cannot be compared; taking turns puts the drift on both doors.
 *
 *   node bench/openai-overhead.ts [engine=embedded|server] [rounds=6] [tokens=200] [parallel=20] [delayMs=5]
 */
import { request } from 'node:http';
import { createTestDatabase } from '../test/support/postgres-server.ts';
import { startFakeLlm } from './support/fake-llm.ts';
import { load, machineReport } from './support/machine.ts';
import { startServer } from './support/parley.ts';
import { cpuMsOf } from './support/proc.ts';
import { agent, chat, postSse, succeeded } from './support/sse-client.ts';
import { ms } from './support/stats.ts';

const ENGINE = process.argv[2] ?? 'embedded';
const ROUNDS = Number(process.argv[3] ?? 6);
const TOKENS = Number(process.argv[4] ?? 200);
const PARALLEL = Number(process.argv[5] ?? 20);
const DELAY_MS = Number(process.argv[6] ?? 5);

const fake = await startFakeLlm({ tokens: 1, delayMs: DELAY_MS });
const database = ENGINE === 'server' ? await createTestDatabase() : undefined;
const server = await startServer({ env: { LLM_BASE_URL: fake.url, DATABASE_URL: database?.url } });

let user = 0;
const messages = [{ role: 'user', content: 'Hello there' }];

/** A streamed completion read to its end; true when it ended with a finish chunk and [DONE]. */
async function streamed(): Promise<boolean> {
  const result = await postSse(`${server.url}/v1/chat/completions`, {
    model: 'parley',
    messages,
    stream: true,
    stream_options: { include_usage: true },
    user: `oa-${++user}`,
  });
  const data = result.events.map((event) => event.data);
  return (
    result.status === 200 &&
    data.at(-1) === '[DONE]' &&
    data.some((line) => line.includes('"finish_reason":"stop"'))
  );
}

/** A non-streamed completion; true for a 200 `chat.completion`. */
function whole(): Promise<boolean> {
  const payload = JSON.stringify({ model: 'parley', messages, user: `oa-${++user}` });
  return new Promise((resolve) => {
    const req = request(
      `${server.url}/v1/chat/completions`,
      {
        method: 'POST',
        agent,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(payload),
        },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (text: string) => {
          body += text;
        });
        res.on('end', () => resolve(res.statusCode === 200 && body.includes('chat.completion')));
      },
    );
    req.on('error', () => resolve(false));
    req.end(payload);
  });
}

const doors = {
  chat: async () => succeeded(await chat(server.url, `chat-${++user}`)),
  streamed,
  whole,
};
type Door = keyof typeof doors;

/** Server CPU per request of one round of `PARALLEL` requests through one door. */
async function round(door: Door, tokens: number): Promise<number> {
  await fake.setReply({ tokens, delayMs: DELAY_MS });
  const before = cpuMsOf(server.pid);
  const ok = await Promise.all(Array.from({ length: PARALLEL }, () => doors[door]()));
  if (!ok.every(Boolean)) throw new Error(`a request through ${door} failed`);
  return (cpuMsOf(server.pid) - before) / PARALLEL;
}

const one: Record<Door, number[]> = { chat: [], streamed: [], whole: [] };
const many: Record<'chat' | 'streamed', number[]> = { chat: [], streamed: [] };
for (const door of ['chat', 'streamed', 'whole'] as const) await round(door, TOKENS); // warm-up
for (let r = 0; r < ROUNDS; r++) {
  const order: Door[] = r % 2 === 0 ? ['chat', 'streamed', 'whole'] : ['whole', 'streamed', 'chat'];
  for (const door of order) one[door].push(await round(door, 1));
  for (const door of order) if (door !== 'whole') many[door].push(await round(door, TOKENS));
}
await server.stop();
await fake.close();
await database?.drop();

const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;
const perToken = (door: 'chat' | 'streamed', i?: number) =>
  i === undefined
    ? ((mean(many[door]) - mean(one[door])) / (TOKENS - 1)) * 1000
    : (((many[door][i] as number) - (one[door][i] as number)) / (TOKENS - 1)) * 1000;
const perRound = (values: number[]) => values.map((v) => v.toFixed(2)).join(', ');

console.log(`## openai-overhead (${ENGINE} engine)\n`);
console.log(`\`\`\`\n${machineReport()}\n\`\`\`\n`);
console.log(
  `${ROUNDS} alternating rounds of ${PARALLEL} requests per door (1 token, then ${TOKENS} tokens, one every ${DELAY_MS} ms).\n`,
);
console.log('| door | CPU per request (1 token) | CPU per paced token |');
console.log('| --- | ---: | ---: |');
console.log(`| POST /chat | ${ms(mean(one.chat))} ms | ${perToken('chat').toFixed(0)} µs |`);
console.log(
  `| POST /v1/chat/completions, streamed | ${ms(mean(one.streamed))} ms | ${perToken('streamed').toFixed(0)} µs |`,
);
console.log(`| POST /v1/chat/completions, not streamed | ${ms(mean(one.whole))} ms | – |`);
const fixed = mean(one.streamed) - mean(one.chat);
const fixedWhole = mean(one.whole) - mean(one.chat);
const token = perToken('streamed') - perToken('chat');
console.log(
  `\nadded over /chat: per completion ${fixed.toFixed(2)} ms streamed, ${fixedWhole.toFixed(2)} ms not streamed (target ≤ 1 ms: ${Math.max(fixed, fixedWhole) <= 1 ? 'PASS' : 'FAIL'}); per streamed token ${token.toFixed(1)} µs (target ≤ 10 µs: ${token <= 10 ? 'PASS' : 'FAIL'})`,
);
console.log('\nper round, ms per request (1 token):');
console.log(`- /chat: ${perRound(one.chat)}`);
console.log(`- streamed: ${perRound(one.streamed)}`);
console.log(`- not streamed: ${perRound(one.whole)}`);
console.log('per round, µs per token:');
console.log(`- /chat: ${many.chat.map((_, i) => perToken('chat', i).toFixed(0)).join(', ')}`);
console.log(
  `- streamed: ${many.streamed.map((_, i) => perToken('streamed', i).toFixed(0)).join(', ')}`,
);
console.log(`\nuptime at end: ${load()}`);
