import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import type { ChatModel } from './chat-model.ts';
import { ModelServerWatch } from './model-server-watch.ts';
import { createOpenAICompatibleModel } from './openai-compatible-model.ts';
import { shownUri } from './shown-uri.ts';

export type ModelConfig = Pick<
  Config,
  'LLM_BASE_URL' | 'LLM_API_KEY' | 'LLM_MODEL' | 'LLM_MODEL_PATH' | 'LLM_THREADS' | 'DATA_DIR'
>;

/**
 * Chooses the chat model: an OpenAI-compatible server when LLM_BASE_URL is set, otherwise
 * the embedded llama.cpp model, from LLM_MODEL_PATH or downloaded on first use. Nothing is
 * loaded at start-up: a missing model makes `/chat` explain itself and leaves the rest working.
 *
 * The embedded model's code is imported only when it is the one chosen: node-llama-cpp and
 * its downloader are ~400 modules, ~180 ms of every start (bench/RESULTS.md) that a server
 * with LLM_BASE_URL never uses.
 */
export async function createChatModel(config: ModelConfig, logger: Logger): Promise<ChatModel> {
  if (config.LLM_BASE_URL) {
    logger.info(
      { baseURL: shownUri(config.LLM_BASE_URL), model: config.LLM_MODEL },
      'using an OpenAI-compatible model server',
    );
    return createOpenAICompatibleModel({
      baseURL: config.LLM_BASE_URL,
      apiKey: config.LLM_API_KEY,
      model: config.LLM_MODEL,
      watch: new ModelServerWatch({
        baseUrl: config.LLM_BASE_URL,
        model: config.LLM_MODEL ?? 'default',
        logger,
      }),
    });
  }
  const { createEmbeddedChatModel } = await import('./embedded-chat-model.ts');
  return createEmbeddedChatModel(config, logger);
}
