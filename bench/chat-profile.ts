/**
 * Where a chat's server CPU goes, by thread: the server runs with `--cpu-prof` (one profile per
 * thread: the main thread, and PGlite's worker on the embedded engine), `chats` one-token chats
 * are sent 20 at a time, and each profile's self time is printed by function, most first.
 * Sampled profiles count wall time inside a system call (a socket write that wakes the other
 * thread includes being preempted), so figures for `writev`/`writeBuffer` are upper bounds.
 *
 *   node bench/chat-profile.ts [embedded|server] [chats=3000] [top=25]
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase } from '../test/support/postgres-server.ts';
import { startFakeLlm } from './support/fake-llm.ts';
import { machineReport } from './support/machine.ts';
import { startServer } from './support/parley.ts';
import { chat, succeeded } from './support/sse-client.ts';

const ENGINE = process.argv[2] ?? 'embedded';
const CHATS = Number(process.argv[3] ?? 3000);
const TOP = Number(process.argv[4] ?? 25);
const PARALLEL = 20;

interface Profile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[];
  samples: number[];
  timeDeltas: number[];
}

const profiles = mkdtempSync(join(tmpdir(), 'parley-chat-profile-'));
const fake = await startFakeLlm({ tokens: 1, delayMs: 0 });
const database = ENGINE === 'server' ? await createTestDatabase() : undefined;
process.env.BENCH_SERVER_NODE_OPTIONS = `--cpu-prof --cpu-prof-dir=${profiles}`;
const server = await startServer({
  env: { LLM_BASE_URL: fake.url, DATABASE_URL: database?.url, CONVERSATION_TITLES: 'question' },
});
let next = 0;
let failed = 0;
const worker = async () => {
  while (next < CHATS) {
    const i = next++;
    if (!succeeded(await chat(server.url, `profile-${i % 40}`, `question ${i} about the lease`)))
      failed++;
  }
};
await Promise.all(Array.from({ length: PARALLEL }, worker));
await server.stop();
await fake.close();
await database?.drop();

console.log(`## chat-profile (${ENGINE} engine)\n\n\`\`\`\n${machineReport()}\n\`\`\`\n`);
console.log(`${CHATS} chats of one token, ${PARALLEL} at a time, ${failed} failed.\n`);
for (const file of readdirSync(profiles).sort()) {
  const profile = JSON.parse(readFileSync(join(profiles, file), 'utf8')) as Profile;
  const nodes = new Map(profile.nodes.map((node) => [node.id, node.callFrame]));
  const self = new Map<string, number>();
  let busy = 0;
  profile.samples.forEach((id, i) => {
    const frame = nodes.get(id);
    if (!frame || frame.functionName === '(idle)') return;
    const us = profile.timeDeltas[i] ?? 0;
    busy += us;
    const where = frame.url.replace(/.*node_modules\//, '').replace(/.*\/(src|bench)\//, '$1/');
    const key = `${frame.functionName || '(anonymous)'} ${where}:${frame.lineNumber}`;
    self.set(key, (self.get(key) ?? 0) + us);
  });
  console.log(`### ${file}: busy ${(busy / 1000 / CHATS).toFixed(2)} ms a chat\n`);
  console.log('| self µs a chat | function |\n| ---: | --- |');
  for (const [key, us] of [...self].sort((a, b) => b[1] - a[1]).slice(0, TOP)) {
    console.log(`| ${(us / CHATS).toFixed(1)} | \`${key.trim()}\` |`);
  }
  console.log();
}
rmSync(profiles, { recursive: true, force: true });
