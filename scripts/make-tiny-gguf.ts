// Writes a tiny scripted llama GGUF (a few hundred KB) that llama.cpp loads and
// that greedily answers any prompt with the given text, then EOS. For trying
// the embedded-model path without downloading real weights.
//
//   node scripts/make-tiny-gguf.ts out.gguf --text "Hello from tiny llama"
//   node scripts/make-tiny-gguf.ts out.gguf --tool get_weather --args '{"city":"Seoul"}'
//   LLM_MODEL_PATH=out.gguf npm start

import { parseArgs } from 'node:util';
import { writeTinyGguf } from '../test/support/tiny-gguf/make-tiny-gguf.ts';
import { toolCallScript } from '../test/support/tiny-gguf/tool-call-script.ts';

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: {
    text: { type: 'string' },
    tool: { type: 'string' },
    args: { type: 'string', default: '{}' },
    loop: { type: 'boolean', default: false },
  },
});

const out = positionals[0];
if (!out || (values.text === undefined) === (values.tool === undefined)) {
  console.error(
    'usage: node scripts/make-tiny-gguf.ts <out.gguf> (--text <answer> | --tool <name> [--args <json>]) [--loop]',
  );
  process.exit(2);
}

const script =
  values.tool === undefined
    ? (values.text ?? '')
    : toolCallScript(values.tool, JSON.parse(values.args));
const size = await writeTinyGguf(out, { script, loop: values.loop });
console.log(`wrote ${out} (${size} bytes)`);
