/**
 * Supporting: CPU per paced token in the layers of the AI SDK that Parley's chat goes
 * through, without Parley's HTTP edge or database: the provider's own stream
 * (`doStream`), Parley's own tool loop over it, and the SDK's `streamText` (the loop Parley
 * used before issue 12). One process, 20 streams at a time; the fake model runs in its own
 * process and sends one token every `delayMs`, so each token comes in its own network read,
 * as from a real model. Layers run in the order listed, each after a warm-up round.
 *
 *   node bench/sdk-layers.ts [tokens=200] [parallel=20] [delayMs=5]
 */
import type { LanguageModelV4 } from '@ai-sdk/provider';
import {
  experimental_streamLanguageModelCall,
  experimental_streamTextLowMemory,
  streamText,
} from 'ai';
import { runToolLoop } from '../src/assistant/tool-loop.ts';
import { createOpenAICompatibleModel } from '../src/models/openai-compatible-model.ts';
import { startFakeLlm } from './support/fake-llm.ts';
import { load, machineReport } from './support/machine.ts';

const TOKENS = Number(process.argv[2] ?? 200);
const PARALLEL = Number(process.argv[3] ?? 20);
const DELAY_MS = Number(process.argv[4] ?? 5);
const ROUNDS = 5;

const fake = await startFakeLlm({ tokens: TOKENS, delayMs: DELAY_MS });
const model = (await createOpenAICompatibleModel({
  baseURL: fake.url,
  model: 'm',
}).get()) as LanguageModelV4;
const prompt = [{ role: 'user' as const, content: [{ type: 'text' as const, text: 'hi' }] }];

/** Text deltas read through one layer; returns how many arrived. */
const layers: Record<string, () => Promise<number>> = {
  'provider doStream': async () => {
    const { stream } = await model.doStream({ prompt });
    let deltas = 0;
    for await (const part of stream) if (part.type === 'text-delta') deltas++;
    return deltas;
  },
  "Parley's tool loop (runToolLoop, reads doStream)": async () => {
    let deltas = 0;
    for await (const part of runToolLoop({
      model,
      instructions: () => 'be brief',
      messages: [{ role: 'user', content: 'hi' }],
      tools: {},
      maxSteps: 8,
      maxRetries: 0,
      signal: new AbortController().signal,
      chunkTimeoutMs: 60_000,
      toolTimeoutMs: 60_000,
    }))
      if (part.type === 'text-delta') deltas++;
    return deltas;
  },
  'streamLanguageModelCall (one model call, tool calls parsed)': async () => {
    const { stream } = await experimental_streamLanguageModelCall({
      model,
      messages: [{ role: 'user', content: 'hi' }],
    });
    let deltas = 0;
    for await (const part of stream) if (part.type === 'text-delta') deltas++;
    return deltas;
  },
  'streamText fullStream': async () => {
    const result = streamText({ model, messages: [{ role: 'user', content: 'hi' }] });
    let deltas = 0;
    for await (const part of result.fullStream) if (part.type === 'text-delta') deltas++;
    return deltas;
  },
  'streamTextLowMemory fullStream (one consumer, no replay)': async () => {
    const result = experimental_streamTextLowMemory({
      model,
      messages: [{ role: 'user', content: 'hi' }],
    });
    let deltas = 0;
    for await (const part of result.fullStream) if (part.type === 'text-delta') deltas++;
    return deltas;
  },
};

/** CPU of this process per token, over ROUNDS rounds of PARALLEL streams. */
async function measure(read: () => Promise<number>, tokens: number) {
  await fake.setReply({ tokens, delayMs: DELAY_MS });
  await Promise.all(Array.from({ length: PARALLEL }, read)); // warm-up
  const before = process.cpuUsage();
  let deltas = 0;
  for (let round = 0; round < ROUNDS; round++) {
    const counts = await Promise.all(Array.from({ length: PARALLEL }, read));
    deltas += counts.reduce((sum, n) => sum + n, 0);
  }
  const used = process.cpuUsage(before);
  return {
    cpuMs: (used.user + used.system) / 1000 / (ROUNDS * PARALLEL),
    deltas: deltas / (ROUNDS * PARALLEL),
  };
}

console.log(`## sdk-layers\n`);
console.log(`\`\`\`\n${machineReport()}\n\`\`\`\n`);
console.log(`${PARALLEL} streams at a time, ${ROUNDS} rounds; one token every ${DELAY_MS} ms.\n`);
console.log(
  '| layer | CPU per stream, 1 token | CPU per stream, N tokens | deltas read | CPU per further token |',
);
console.log('| --- | ---: | ---: | ---: | ---: |');
for (const [name, read] of Object.entries(layers)) {
  const one = await measure(read, 1);
  const many = await measure(read, TOKENS);
  const perToken = ((many.cpuMs - one.cpuMs) / (TOKENS - 1)) * 1000;
  console.log(
    `| ${name} | ${one.cpuMs.toFixed(2)} ms | ${many.cpuMs.toFixed(2)} ms (N=${TOKENS}) | ${many.deltas.toFixed(0)} | ${perToken.toFixed(0)} µs |`,
  );
}
await fake.close();
console.log(`\nuptime at end: ${load()}`);
