import type { LanguageModelV4CallOptions, LanguageModelV4FinishReason } from '@ai-sdk/provider';
import type { LLamaChatGenerateResponseOptions, LlamaChatResponse } from 'node-llama-cpp';

// AI SDK call settings -> LlamaChat sampling options, and the way back for
// the stop reason. Unset settings stay unset so node-llama-cpp's defaults
// (greedy decoding, its repeat penalty) apply.

type Sampling = Pick<
  LLamaChatGenerateResponseOptions,
  | 'maxTokens'
  | 'temperature'
  | 'topK'
  | 'topP'
  | 'seed'
  | 'customStopTriggers'
  | 'repeatPenalty'
  | 'budgets'
>;

export function toSampling(
  options: LanguageModelV4CallOptions,
  /** The most tokens any call generates. */
  defaultMaxTokens: number,
): Sampling {
  // The cap holds for a call that asks for more too (an OpenAI-compatible client's max_tokens):
  // it is what keeps a looping model from holding the machine's CPU.
  const sampling: Sampling = {
    maxTokens: Math.min(options.maxOutputTokens ?? defaultMaxTokens, defaultMaxTokens),
  };
  if (options.temperature !== undefined) sampling.temperature = options.temperature;
  if (options.topK !== undefined) sampling.topK = options.topK;
  if (options.topP !== undefined) sampling.topP = options.topP;
  if (options.seed !== undefined) sampling.seed = options.seed;
  if (options.stopSequences?.length) sampling.customStopTriggers = options.stopSequences;
  if (options.presencePenalty !== undefined || options.frequencyPenalty !== undefined) {
    sampling.repeatPenalty = {
      ...(options.presencePenalty === undefined
        ? {}
        : { presencePenalty: options.presencePenalty }),
      ...(options.frequencyPenalty === undefined
        ? {}
        : { frequencyPenalty: options.frequencyPenalty }),
    };
  }
  // A thought budget of 0 makes node-llama-cpp close the thought at once.
  if (options.reasoning === 'none') sampling.budgets = { thoughtTokens: 0 };
  return sampling;
}

export function toFinishReason(
  metadata: LlamaChatResponse['metadata'],
): LanguageModelV4FinishReason {
  const raw = metadata.stopReason;
  switch (raw) {
    case 'eogToken':
    case 'stopGenerationTrigger':
    case 'customStopTrigger':
      return { unified: 'stop', raw };
    case 'functionCalls':
      return { unified: 'tool-calls', raw };
    case 'maxTokens':
      return { unified: 'length', raw };
    case 'abort':
      return { unified: 'other', raw };
  }
}
