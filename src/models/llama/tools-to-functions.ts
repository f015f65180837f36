import type {
  LanguageModelV4CallOptions,
  LanguageModelV4FunctionTool,
  SharedV4Warning,
} from '@ai-sdk/provider';
import type { ChatModelFunctions } from 'node-llama-cpp';
import { toGbnfJsonSchema } from './json-schema-to-gbnf.ts';

// AI SDK function tools become node-llama-cpp function *definitions* only
// (no `handler`): LlamaChat then stops at each call and returns it, and the
// AI SDK runs the tool and the loop, exactly as with a remote provider.

export type ConvertedTools = {
  functions: ChatModelFunctions | undefined;
  /** The original input schemas by tool name, to post-process generated arguments. */
  inputSchemas: Map<string, unknown>;
  warnings: SharedV4Warning[];
};

export function toolsToFunctions(
  tools: LanguageModelV4CallOptions['tools'],
  toolChoice: LanguageModelV4CallOptions['toolChoice'],
): ConvertedTools {
  const warnings: SharedV4Warning[] = [];
  const inputSchemas = new Map<string, unknown>();
  const functionTools: LanguageModelV4FunctionTool[] = [];
  for (const tool of tools ?? []) {
    if (tool.type === 'function') functionTools.push(tool);
    else warnings.push({ type: 'unsupported', feature: `provider tool ${tool.id}` });
  }
  if (functionTools.length === 0 || toolChoice?.type === 'none') {
    return { functions: undefined, inputSchemas, warnings };
  }

  let offered = functionTools;
  if (toolChoice?.type === 'tool') {
    offered = functionTools.filter((t) => t.name === toolChoice.toolName);
  }
  if (toolChoice?.type === 'tool' || toolChoice?.type === 'required') {
    // node-llama-cpp cannot force a call; the model may still answer in text.
    warnings.push({
      type: 'compatibility',
      feature: `toolChoice ${toolChoice.type}`,
      details: 'the embedded model is offered the tool(s) but not forced to call one',
    });
  }

  const functions: Record<string, ChatModelFunctions[string]> = {};
  for (const tool of offered) {
    inputSchemas.set(tool.name, tool.inputSchema);
    functions[tool.name] = {
      ...(tool.description ? { description: tool.description } : {}),
      params: toGbnfJsonSchema(tool.inputSchema),
    };
  }
  return { functions, inputSchemas, warnings };
}
