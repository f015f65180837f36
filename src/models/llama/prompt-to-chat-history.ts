import type {
  LanguageModelV4Prompt,
  LanguageModelV4ToolResultOutput,
  SharedV4Warning,
} from '@ai-sdk/provider';
import type { ChatHistoryItem, ChatModelResponse } from 'node-llama-cpp';

// Converts the AI SDK prompt to node-llama-cpp's chat history. The two models
// differ in one way that matters: node-llama-cpp stores a tool result inside
// the model response that made the call, while the AI SDK sends results as
// separate `tool` messages. Results are paired with their calls by id.

export type ConvertedPrompt = { history: ChatHistoryItem[]; warnings: SharedV4Warning[] };

function resultValue(output: LanguageModelV4ToolResultOutput): unknown {
  switch (output.type) {
    case 'text':
    case 'json':
      return output.value;
    case 'error-text':
    case 'error-json':
      return { error: output.value };
    case 'execution-denied':
      return { error: 'The tool call was denied.', reason: output.reason };
    case 'content':
      return output.value
        .map((part) => (part.type === 'text' ? part.text : `[${part.type}]`))
        .join('\n');
  }
}

function collectResults(prompt: LanguageModelV4Prompt): Map<string, unknown> {
  const results = new Map<string, unknown>();
  for (const message of prompt) {
    if (message.role !== 'tool' && message.role !== 'assistant') continue;
    for (const part of message.content) {
      if (part.type === 'tool-result') results.set(part.toolCallId, resultValue(part.output));
    }
  }
  return results;
}

/**
 * The history always ends with a model response for node-llama-cpp to
 * continue: an empty one after a user turn, or the last assistant turn itself
 * (after tool results, the model carries on with the same response).
 */
export function promptToChatHistory(prompt: LanguageModelV4Prompt): ConvertedPrompt {
  const warnings: SharedV4Warning[] = [];
  const results = collectResults(prompt);
  const history: ChatHistoryItem[] = [];
  let response: ChatModelResponse | undefined; // the model turn being built

  for (const message of prompt) {
    if (message.role === 'system') {
      history.push({ type: 'system', text: message.content });
      response = undefined;
    } else if (message.role === 'user') {
      const texts: string[] = [];
      for (const part of message.content) {
        if (part.type === 'text') texts.push(part.text);
        else if (part.data.type === 'text') {
          // A text document: the model reads it as part of the message.
          texts.push(part.filename ? `${part.filename}:\n${part.data.text}` : part.data.text);
        } else {
          warnings.push({ type: 'unsupported', feature: `user file part (${part.mediaType})` });
        }
      }
      history.push({ type: 'user', text: texts.join('\n') });
      response = undefined;
    } else if (message.role === 'assistant') {
      if (!response) {
        response = { type: 'model', response: [] };
        history.push(response);
      }
      for (const part of message.content) {
        if (part.type === 'text') response.response.push(part.text);
        else if (part.type === 'reasoning') {
          response.response.push({
            type: 'segment',
            segmentType: 'thought',
            text: part.text,
            ended: true,
          });
        } else if (part.type === 'tool-call') {
          response.response.push({
            type: 'functionCall',
            name: part.toolName,
            params: part.input,
            // A call without a result can only be an interrupted turn; say so.
            result: results.has(part.toolCallId) ? results.get(part.toolCallId) : null,
          });
        } else if (part.type !== 'tool-result') {
          warnings.push({ type: 'unsupported', feature: `assistant ${part.type} part` });
        }
      }
    }
    // `tool` messages were folded into the calls above; the model turn goes on.
  }

  const last = history.at(-1);
  if (last?.type !== 'model') history.push({ type: 'model', response: [] });
  return { history, warnings };
}
