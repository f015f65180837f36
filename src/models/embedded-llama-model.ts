import type {
  LanguageModelV4,
  LanguageModelV4CallOptions,
  LanguageModelV4Content,
  LanguageModelV4FinishReason,
  LanguageModelV4StreamPart,
  LanguageModelV4Usage,
  SharedV4Warning,
} from '@ai-sdk/provider';
import { type Llama, LlamaChat, type LlamaGrammar } from 'node-llama-cpp';
import { toFinishReason, toSampling } from './llama/call-settings.ts';
import { removeOmittedOptionals, toGbnfJsonSchema } from './llama/json-schema-to-gbnf.ts';
import type { LlamaModelLoader, LoadedLlama } from './llama/llama-model-loader.ts';
import { promptToChatHistory } from './llama/prompt-to-chat-history.ts';
import { createStreamPartWriter } from './llama/stream-part-writer.ts';
import { toolsToFunctions } from './llama/tools-to-functions.ts';

// The embedded llama.cpp model as an AI SDK language model, so the chat's tool
// loop drives its `doStream` exactly like a remote provider's. node-llama-cpp
// only generates: it stops at function calls (no handlers are given) and the
// loop (src/assistant/tool-loop.ts) executes the tools.

export type EmbeddedLlamaModelOptions = {
  loader: LlamaModelLoader;
  /** Reported as the response model id (default 'embedded-llama'). */
  modelId?: string;
  /**
   * Tokens a call generates at most, when it sets no maxOutputTokens or asks for more, so a
   * looping model cannot hold the CPU (default 2048).
   */
  defaultMaxOutputTokens?: number;
};

async function responseGrammar(
  loaded: LoadedLlama,
  options: LanguageModelV4CallOptions,
): Promise<LlamaGrammar | undefined> {
  if (options.responseFormat?.type !== 'json') return undefined;
  if (!options.responseFormat.schema) return loaded.llama.getGrammarFor('json');
  // The method is generic over the literal schema type; ours is built at run time.
  const schema = toGbnfJsonSchema(options.responseFormat.schema) as Parameters<
    Llama['createGrammarForJsonSchema']
  >[0];
  return loaded.llama.createGrammarForJsonSchema(schema);
}

async function generate(
  loaded: LoadedLlama,
  options: LanguageModelV4CallOptions,
  settings: { modelId: string; defaultMaxOutputTokens: number },
  signal: AbortSignal,
  emit: (part: LanguageModelV4StreamPart) => void,
): Promise<void> {
  const prompt = promptToChatHistory(options.prompt);
  const tools = toolsToFunctions(options.tools, options.toolChoice);
  const sampling = toSampling(options, settings.defaultMaxOutputTokens);
  const allWarnings: SharedV4Warning[] = [...prompt.warnings, ...tools.warnings];
  let grammar: LlamaGrammar | undefined;
  if (tools.functions && options.responseFormat?.type === 'json') {
    allWarnings.push({ type: 'unsupported', feature: 'responseFormat json together with tools' });
  } else {
    grammar = await responseGrammar(loaded, options);
  }

  const sequence = await loaded.sequences.acquire(signal);
  const chat = new LlamaChat({ contextSequence: sequence, chatWrapper: loaded.chatWrapper });
  const before = sequence.tokenMeter.getState();
  try {
    emit({ type: 'stream-start', warnings: allWarnings });
    emit({ type: 'response-metadata', modelId: settings.modelId, timestamp: new Date() });
    const writer = createStreamPartWriter(emit);
    const result = await chat.generateResponse(prompt.history, {
      ...sampling,
      ...(tools.functions ? { functions: tools.functions } : grammar ? { grammar } : {}),
      signal,
      stopOnAbortSignal: true, // return what was generated instead of throwing
      onResponseChunk(chunk) {
        if (chunk.type === undefined) writer.text(chunk.text);
        else {
          writer.reasoning(chunk.text); // 'thought' (and 'comment') segments
          if (chunk.segmentEndTime) writer.endReasoning();
        }
      },
    });
    for (const call of result.functionCalls ?? []) {
      const input = removeOmittedOptionals(
        call.params ?? {},
        tools.inputSchemas.get(call.functionName),
      );
      writer.toolCall(call.functionName, JSON.stringify(input));
    }
    writer.close();
    const used = sequence.tokenMeter.diff(before);
    emit({
      type: 'finish',
      finishReason: toFinishReason(result.metadata),
      usage: {
        inputTokens: {
          total: used.usedInputTokens,
          noCache: used.usedInputTokens,
          cacheRead: undefined,
          cacheWrite: undefined,
        },
        outputTokens: { total: used.usedOutputTokens, text: undefined, reasoning: undefined },
      },
    });
  } finally {
    chat.dispose({ disposeSequence: false });
    loaded.sequences.release(sequence);
  }
}

export function createEmbeddedLlamaModel(options: EmbeddedLlamaModelOptions): LanguageModelV4 {
  const settings = {
    modelId: options.modelId ?? 'embedded-llama',
    defaultMaxOutputTokens: options.defaultMaxOutputTokens ?? 2048,
  };

  const doStream: LanguageModelV4['doStream'] = async (callOptions) => {
    // Load before streaming: an unavailable model rejects the call itself.
    const loaded = await options.loader.load();
    const stop = new AbortController();
    const onAbort = () => stop.abort(callOptions.abortSignal?.reason);
    if (callOptions.abortSignal?.aborted) onAbort();
    callOptions.abortSignal?.addEventListener('abort', onAbort, { once: true });

    let closed = false;
    const stream = new ReadableStream<LanguageModelV4StreamPart>({
      start(controller) {
        const emit = (part: LanguageModelV4StreamPart) => {
          if (!closed) controller.enqueue(part);
        };
        generate(loaded, callOptions, settings, stop.signal, emit)
          .catch((error: unknown) => emit({ type: 'error', error }))
          .finally(() => {
            callOptions.abortSignal?.removeEventListener('abort', onAbort);
            if (!closed) controller.close();
            closed = true;
          });
      },
      cancel() {
        // The consumer went away: stop generating now rather than at maxTokens.
        closed = true;
        stop.abort();
      },
    });
    return { stream };
  };

  const doGenerate: LanguageModelV4['doGenerate'] = async (callOptions) => {
    const { stream } = await doStream(callOptions);
    const content: LanguageModelV4Content[] = [];
    let block: { text: string } | undefined;
    let warnings: SharedV4Warning[] = [];
    let finishReason: LanguageModelV4FinishReason = { unified: 'other', raw: undefined };
    let usage: LanguageModelV4Usage = {
      inputTokens: {
        total: undefined,
        noCache: undefined,
        cacheRead: undefined,
        cacheWrite: undefined,
      },
      outputTokens: { total: undefined, text: undefined, reasoning: undefined },
    };
    for await (const part of stream) {
      if (part.type === 'text-start' || part.type === 'reasoning-start') {
        const item: LanguageModelV4Content & { text: string } =
          part.type === 'text-start' ? { type: 'text', text: '' } : { type: 'reasoning', text: '' };
        content.push(item);
        block = item;
      } else if (part.type === 'text-delta' || part.type === 'reasoning-delta') {
        if (block) block.text += part.delta;
      } else if (part.type === 'tool-call') content.push(part);
      else if (part.type === 'stream-start') warnings = part.warnings;
      else if (part.type === 'finish') ({ finishReason, usage } = part);
      else if (part.type === 'error') throw part.error;
    }
    return { content, finishReason, usage, warnings };
  };

  return {
    specificationVersion: 'v4',
    provider: 'node-llama-cpp',
    modelId: settings.modelId,
    supportedUrls: {},
    doStream,
    doGenerate,
  };
}
