/**
 * Server CPU a chat costs: fixed (a one-token answer) and per token of a paced answer (one
 * token per network read, as a model writing at reading speed sends it). This is what sets
 * how many concurrent streams one Parley process can carry (see chat-concurrency).
 *
 *   node bench/chat-cpu.ts [engine=embedded|server] [tokens=200] [parallel=20] [delayMs=5]
 */
import { createTestDatabase } from '../test/support/postgres-server.ts';
import { startFakeLlm } from './support/fake-llm.ts';
import { load, machineReport } from './support/machine.ts';
import { startServer } from './support/parley.ts';
import { cpuMsOf } from './support/proc.ts';
import { chat, succeeded } from './support/sse-client.ts';
import { ms } from './support/stats.ts';

const ENGINE = process.argv[2] ?? 'embedded';
const TOKENS = Number(process.argv[3] ?? 200);
const PARALLEL = Number(process.argv[4] ?? 20);
const DELAY_MS = Number(process.argv[5] ?? 5);
const ROUNDS = 3;

const fake = await startFakeLlm({ tokens: 1, delayMs: DELAY_MS });
const database = ENGINE === 'server' ? await createTestDatabase() : undefined;
const server = await startServer({ env: { LLM_BASE_URL: fake.url, DATABASE_URL: database?.url } });

let user = 0;
/** Server CPU per chat, `PARALLEL` chats at a time, `ROUNDS` times; fragments per chat. */
async function measure(tokens: number) {
  await fake.setReply({ tokens, delayMs: DELAY_MS });
  let cpu = 0;
  let fragments = 0;
  for (let round = 0; round < ROUNDS; round++) {
    const before = cpuMsOf(server.pid);
    const results = await Promise.all(
      Array.from({ length: PARALLEL }, () => chat(server.url, `cpu-${++user}`)),
    );
    cpu += cpuMsOf(server.pid) - before;
    if (!results.every(succeeded)) throw new Error('a chat failed');
    fragments += results.reduce((sum, r) => sum + r.fragmentTimes.length, 0);
  }
  return { cpu: cpu / (ROUNDS * PARALLEL), fragments: fragments / (ROUNDS * PARALLEL) };
}

await measure(1); // warm-up
const one = await measure(1);
const many = await measure(TOKENS);
await server.stop();
await fake.close();
await database?.drop();

const perToken = (many.cpu - one.cpu) / (TOKENS - 1);
console.log(`## chat-cpu (${ENGINE} engine)\n`);
console.log(`\`\`\`\n${machineReport()}\n\`\`\`\n`);
console.log(
  `${PARALLEL} chats at a time, ${ROUNDS} rounds; the fake model sends one token every ${DELAY_MS} ms.\n`,
);
console.log('| answer | server CPU per chat | fragments per chat |');
console.log('| --- | ---: | ---: |');
console.log(`| 1 token | ${ms(one.cpu)} ms | ${one.fragments.toFixed(1)} |`);
console.log(`| ${TOKENS} tokens | ${ms(many.cpu)} ms | ${many.fragments.toFixed(1)} |`);
console.log(`\nper paced token: ${(perToken * 1000).toFixed(0)} µs of server CPU`);
console.log(
  `so one core carries about ${Math.floor(1000 / perToken)} paced tokens/s, or ${Math.floor(1000 / perToken / 20)} streams at 20 tokens/s, before counting their starts`,
);
console.log(`\nuptime at end: ${load()}`);
