import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { generateText, type LanguageModel } from 'ai';
import type { Config } from '../config.ts';
import { createBoundedFetch } from '../models/answer-bound.ts';

/**
 * The most a vision answer is read to: its text is at most `maxTokens` tokens, each at most
 * ~16 bytes as JSON escapes (64 allowed, for reasoning a server sends alongside), plus 4 MiB
 * for the rest of the JSON (usage, logprobs some servers add). 512 tokens make ~4 MiB.
 */
export const visionAnswerMaxBytes = (maxTokens: number) => 4 * 1024 * 1024 + maxTokens * 64;

export interface VisionSettings {
  baseURL: string;
  apiKey: string | undefined;
  modelId: string;
  maxTokens: number;
  maxRetries: number;
}

export interface VisionQuestion {
  image: Uint8Array;
  mediaType: string;
  question: string;
  signal?: AbortSignal | undefined;
}

/** A vision model answering questions about one image; separate from the text model. */
export interface VisionModel {
  readonly id: string;
  analyze(input: VisionQuestion): Promise<string>;
}

/**
 * An OpenAI-compatible vision endpoint (Ollama, llama.cpp server, vLLM, OpenAI). The provider
 * is created on first use (spec rule 1); the image goes as an `image_url` data URL and the
 * answer is capped at `maxTokens` (`max_tokens`).
 */
export function createVisionModel(settings: VisionSettings): VisionModel {
  let model: LanguageModel | undefined;
  const get = () => {
    model ??= createOpenAICompatible({
      name: 'vision',
      baseURL: settings.baseURL.replace(/\/+$/, ''),
      apiKey: settings.apiKey,
      fetch: createBoundedFetch('vision model', visionAnswerMaxBytes(settings.maxTokens)),
    }).chatModel(settings.modelId);
    return model;
  };
  return {
    id: `openai-compatible:${settings.modelId}`,
    async analyze({ image, mediaType, question, signal }) {
      const result = await generateText({
        model: get(),
        maxOutputTokens: settings.maxTokens,
        maxRetries: settings.maxRetries,
        ...(signal ? { abortSignal: signal } : {}),
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: question },
              { type: 'image', image: image, mediaType },
            ],
          },
        ],
      });
      return result.text;
    },
  };
}

/**
 * The configured vision model, or undefined without a model id or server. With VISION_BASE_URL
 * unset it is served by LLM_BASE_URL, with that server's key unless VISION_API_KEY is set.
 */
export function visionModelFor(
  config: Pick<
    Config,
    | 'VISION_BASE_URL'
    | 'VISION_API_KEY'
    | 'VISION_MODEL_ID'
    | 'VISION_MAX_TOKENS'
    | 'LLM_BASE_URL'
    | 'LLM_API_KEY'
    | 'LLM_MAX_RETRIES'
  >,
): VisionModel | undefined {
  const baseURL = config.VISION_BASE_URL ?? config.LLM_BASE_URL;
  if (!baseURL || !config.VISION_MODEL_ID) return undefined;
  return createVisionModel({
    baseURL,
    apiKey: config.VISION_BASE_URL
      ? config.VISION_API_KEY
      : (config.VISION_API_KEY ?? config.LLM_API_KEY),
    modelId: config.VISION_MODEL_ID,
    maxTokens: config.VISION_MAX_TOKENS,
    maxRetries: config.LLM_MAX_RETRIES,
  });
}
