import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import { type ChatModel, ModelNotConfiguredError } from './chat-model.ts';
import { createOpenAICompatibleModel } from './openai-compatible-model.ts';

/** Chooses the chat model from configuration: an OpenAI-compatible server, or embedded. */
export function createChatModel(
  config: Pick<
    Config,
    'LLM_BASE_URL' | 'LLM_API_KEY' | 'LLM_MODEL' | 'LLM_MODEL_PATH' | 'DATA_DIR'
  >,
  logger: Logger,
): ChatModel {
  if (config.LLM_BASE_URL) {
    logger.info(
      { baseURL: config.LLM_BASE_URL, model: config.LLM_MODEL },
      'using an OpenAI-compatible model server',
    );
    return createOpenAICompatibleModel({
      baseURL: config.LLM_BASE_URL,
      apiKey: config.LLM_API_KEY,
      model: config.LLM_MODEL,
    });
  }
  return {
    id: 'embedded',
    get: async () => {
      throw new ModelNotConfiguredError(
        'No model is available. Set LLM_BASE_URL to an OpenAI-compatible server, or LLM_MODEL_PATH to a GGUF file.',
      );
    },
  };
}
