import type { ScriptStep } from './script-tokens.ts';

// How a function call looks to node-llama-cpp for the tiny template, and which
// parts of it the model itself generates. node-llama-cpp derives the syntax
// from TINY_CHAT_TEMPLATE (the Qwen/Hermes JSON-in-<tool_call> format). Once
// the model has written the prefix, node-llama-cpp rewrites the call text into
// the context itself, one piece at a time, and lets the model generate only
// the function name (ended by "\n") and then the JSON arguments (ended by four
// newlines) under grammars. Checked against node-llama-cpp 3.22.

export const TINY_CALL_PREFIX = '<tool_call>\n{"name": "';
export const TINY_CALL_PARAMS_PREFIX = '", "arguments": ';
export const TINY_CALL_SUFFIX = '}\n</tool_call>';

/** Script steps for a model that calls `name` with `args`, then ends its turn. */
export function toolCallScript(name: string, args: unknown): ScriptStep[] {
  return [
    { text: TINY_CALL_PREFIX },
    { after: TINY_CALL_PREFIX, text: `${name}\n` },
    { after: TINY_CALL_PARAMS_PREFIX, text: `${JSON.stringify(args)}\n\n\n\n` },
    { after: TINY_CALL_SUFFIX, text: '' },
  ];
}
