/**
 * Supporting (issue 12, target 2): the floor under any Node server's CPU per paced token on
 * this machine, measured like chat-cpu (server CPU from /proc, one-token answers subtracted
 * from N-token ones, 20 streams at a time). Bare servers, each in its own process (modes in
 * support/sse-floor-child.ts): `write` only writes one SSE fragment per token to its client
 * (no upstream), `relay` reads the fake model with fetch and writes each token (no SDK, no
 * database): what Parley's per-token figure stands on.
 *
 *   SSE_FLOOR_MODES=write,relay,… node bench/sse-floor.ts [tokens=200] [parallel=20] [delayMs=5]
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { startFakeLlm } from './support/fake-llm.ts';
import { load, machineReport } from './support/machine.ts';
import { cpuMsOf } from './support/proc.ts';
import { postSse } from './support/sse-client.ts';

const TOKENS = Number(process.argv[2] ?? 200);
const PARALLEL = Number(process.argv[3] ?? 20);
const DELAY_MS = Number(process.argv[4] ?? 5);
const ROUNDS = 3;

const fake = await startFakeLlm({ tokens: 1, delayMs: DELAY_MS });

async function startChild(mode: string) {
  const child = spawn(
    process.execPath,
    [new URL('./support/sse-floor-child.ts', import.meta.url).pathname, mode, fake.url],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const [line] = (await once(createInterface({ input: child.stdout }), 'line')) as [string];
  return { url: `http://127.0.0.1:${line}`, pid: child.pid as number, child };
}

async function measure(server: { url: string; pid: number }, tokens: number) {
  await fake.setReply({ tokens, delayMs: DELAY_MS });
  let cpu = 0;
  let events = 0;
  for (let round = 0; round < ROUNDS; round++) {
    const before = cpuMsOf(server.pid);
    const results = await Promise.all(
      Array.from({ length: PARALLEL }, () => postSse(server.url, { tokens, delayMs: DELAY_MS })),
    );
    cpu += cpuMsOf(server.pid) - before;
    if (results.some((r) => r.status !== 200 || r.failure)) throw new Error('a stream failed');
    events += results.reduce((sum, r) => sum + r.events.length - 1, 0);
  }
  return { cpu: cpu / (ROUNDS * PARALLEL), events: events / (ROUNDS * PARALLEL) };
}

const rows: string[] = [];
const MODES = process.env.SSE_FLOOR_MODES?.split(',') ?? [
  'write',
  'socket',
  'passthrough',
  'readable',
  'relay',
  'relay-http',
];
for (const mode of MODES) {
  const server = await startChild(mode);
  await measure(server, 1); // warm-up
  const one = await measure(server, 1);
  const many = await measure(server, TOKENS);
  server.child.kill();
  const perToken = ((many.cpu - one.cpu) / (TOKENS - 1)) * 1000;
  rows.push(
    `| ${mode} | ${one.cpu.toFixed(2)} ms | ${many.cpu.toFixed(2)} ms | ${many.events.toFixed(1)} | ${perToken.toFixed(0)} µs |`,
  );
}
await fake.close();

console.log('## sse-floor\n');
console.log(`\`\`\`\n${machineReport()}\n\`\`\`\n`);
console.log(
  `${PARALLEL} streams at a time, ${ROUNDS} rounds; one token every ${DELAY_MS} ms (the fake model's pace for relay, the server's own timer for write).\n`,
);
console.log(
  `| bare server | CPU per stream, 1 token | CPU per stream, ${TOKENS} tokens | fragments per stream | CPU per further token |`,
);
console.log('| --- | ---: | ---: | ---: | ---: |');
for (const row of rows) console.log(row);
console.log(`\nuptime at end: ${load()}`);
