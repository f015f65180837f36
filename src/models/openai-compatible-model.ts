import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { wrapLanguageModel } from 'ai';
import type { ChatModel } from './chat-model.ts';
import { createSseBurstMerger } from './coalesce-sse-bursts.ts';
import { createHttpFetch } from './http-fetch.ts';
import { createEventBound } from './model-event-bound.ts';
import type { ModelServerWatch } from './model-server-watch.ts';
import { thinkTagMiddleware } from './think-tags.ts';

export interface OpenAICompatibleSettings {
  baseURL: string;
  apiKey?: string | undefined;
  model?: string | undefined;
  /** Learns from every request whether the server can be used (`/health`'s model state). */
  watch?: ModelServerWatch | undefined;
}

/**
 * Any server speaking the OpenAI chat-completions protocol: Ollama, vLLM, llama.cpp server,
 * LM Studio, OpenAI. Reasoning arrives as `reasoning_content` / `reasoning` deltas (handled by
 * the provider) or as `<think>…</think>` inside the text (split out by the middleware, or in a chat by
 * the tool loop).
 */
export function createOpenAICompatibleModel(settings: OpenAICompatibleSettings): ChatModel {
  const watched = (fetch: typeof globalThis.fetch) => settings.watch?.watch(fetch) ?? fetch;
  const provider = createOpenAICompatible({
    name: 'llm',
    baseURL: settings.baseURL.replace(/\/+$/, ''),
    apiKey: settings.apiKey,
    includeUsage: true,
    // Structured output (the memory decision) as a JSON schema in `response_format`, which
    // Ollama, vLLM, llama.cpp server and OpenAI all enforce; plain `json_object` would not.
    supportsStructuredOutputs: true,
    // Streams are read with undici's dispatcher (less CPU per token than the built-in fetch), and
    // tokens that arrive together are merged before the SDK's per-chunk pipeline. No event is
    // read past MODEL_EVENT_MAX_BYTES, whatever the body's content type says it is.
    fetch: watched(
      createHttpFetch({
        transformBody: (headers) =>
          headers.get('content-type')?.startsWith('text/event-stream')
            ? createSseBurstMerger()
            : createEventBound(),
      }),
    ),
  });
  const modelName = settings.model ?? 'default';
  const chatModel = provider.chatModel(modelName);
  const model = wrapLanguageModel({
    model: chatModel,
    middleware: thinkTagMiddleware(),
  });
  return {
    id: `openai-compatible:${modelName}`,
    get: async () => model,
    // The chat's loop splits the tags itself, on the provider's own stream.
    getForChat: async () => ({ model: chatModel, reasoningTag: 'think' }),
    // Not probed: learnt from the requests made anyway (see ModelServerWatch).
    status: () => settings.watch?.status() ?? { source: 'server', state: 'ready' },
  };
}
