// ChatML chat template with JSON tool calls inside <tool_call> tags (the
// format of the Qwen instruct family, which the default model belongs to).
// node-llama-cpp reads it from `tokenizer.chat_template` and derives its
// function-calling syntax from it, so the tiny model goes through the same
// "resolve the chat wrapper from the GGUF" path as a real model.

export const TINY_CHAT_TEMPLATE = [
  '{%- if tools %}',
  "{{- '<|im_start|>system\\n' }}",
  "{%- if messages[0].role == 'system' %}{{- messages[0].content + '\\n\\n' }}{%- endif %}",
  "{{- '# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\nYou are provided with function signatures within <tools></tools> XML tags:\\n<tools>' }}",
  "{%- for tool in tools %}{{- '\\n' }}{{- tool | tojson }}{%- endfor %}",
  '{{- \'\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{"name": <function-name>, "arguments": <args-json-object>}\\n</tool_call><|im_end|>\\n\' }}',
  "{%- elif messages[0].role == 'system' %}",
  "{{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}",
  '{%- endif %}',
  '{%- for message in messages %}',
  "{%- if message.role == 'user' or (message.role == 'system' and not loop.first) %}",
  "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}",
  "{%- elif message.role == 'assistant' %}",
  "{{- '<|im_start|>assistant' }}",
  "{%- if message.content %}{{- '\\n' + message.content }}{%- endif %}",
  '{%- if message.tool_calls %}{%- for tool_call in message.tool_calls %}',
  '{%- if tool_call.function is defined %}{%- set tool_call = tool_call.function %}{%- endif %}',
  '{{- \'\\n<tool_call>\\n{"name": "\' + tool_call.name + \'", "arguments": \' + (tool_call.arguments | tojson) + \'}\\n</tool_call>\' }}',
  '{%- endfor %}{%- endif %}',
  "{{- '<|im_end|>\\n' }}",
  "{%- elif message.role == 'tool' %}",
  "{%- if loop.first or messages[loop.index0 - 1].role != 'tool' %}{{- '<|im_start|>user' }}{%- endif %}",
  "{{- '\\n<tool_response>\\n' + message.content + '\\n</tool_response>' }}",
  "{%- if loop.last or messages[loop.index0 + 1].role != 'tool' %}{{- '<|im_end|>\\n' }}{%- endif %}",
  '{%- endif %}',
  '{%- endfor %}',
  "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}",
].join('\n');
