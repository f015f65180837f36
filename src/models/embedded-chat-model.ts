import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Logger } from 'pino';
import { type ChatModel, ModelNotConfiguredError } from './chat-model.ts';
import type { ModelConfig } from './create-chat-model.ts';
import { createEmbeddedLlamaModel } from './embedded-llama-model.ts';
import { createLlamaModelLoader } from './llama/llama-model-loader.ts';
import { DEFAULT_MODEL_URI } from './model-download.ts';
import { ModelFetch } from './model-fetch.ts';
import { shownUri } from './shown-uri.ts';

/**
 * The embedded llama.cpp model, from LLM_MODEL_PATH or downloaded on first use (see
 * create-chat-model.ts, which imports this module only when no LLM_BASE_URL is set).
 */
export function createEmbeddedChatModel(config: ModelConfig, logger: Logger): ChatModel {
  const path = config.LLM_MODEL_PATH ? resolve(config.LLM_MODEL_PATH) : undefined;
  const uri = config.LLM_MODEL ?? DEFAULT_MODEL_URI;
  const name = path ?? shownUri(uri); // the URI's signature or password is never shown
  const missingFile = () =>
    `LLM_MODEL_PATH is ${path}, which does not exist. Point it at a GGUF file, ` +
    'or set LLM_BASE_URL to an OpenAI-compatible server.';
  const fetch = path
    ? undefined
    : new ModelFetch({ uri, dir: join(config.DATA_DIR, 'models'), logger });
  const loader = createLlamaModelLoader({
    modelPath: path
      ? async () => {
          if (!existsSync(path)) throw new ModelNotConfiguredError(missingFile());
          return path;
        }
      : () => (fetch as ModelFetch).path(),
    logger,
    ...(config.LLM_THREADS ? { threads: config.LLM_THREADS } : {}),
  });
  const model = createEmbeddedLlamaModel({ loader, modelId: name });
  logger.info({ model: name }, 'using the embedded llama.cpp model (loaded on first chat)');

  return {
    id: `embedded:${name}`,
    async get() {
      try {
        await loader.load();
      } catch (error) {
        if (error instanceof ModelNotConfiguredError) throw error;
        logger.error({ err: error }, 'the embedded model could not be loaded');
        throw new ModelNotConfiguredError(
          `The embedded model ${name} could not be loaded. Set LLM_MODEL_PATH to a ` +
            'working GGUF file, or LLM_BASE_URL to an OpenAI-compatible server.',
          { cause: error },
        );
      }
      return model;
    },
    status: () =>
      fetch
        ? fetch.status()
        : existsSync(path as string)
          ? { source: 'file', state: 'ready' }
          : { source: 'file', state: 'failed', reason: missingFile() },
    prepare(onDownloading) {
      if (!fetch) return;
      fetch.start(onDownloading).catch(() => {}); // its status says why; a chat tries again
    },
    dispose: async () => {
      fetch?.stop();
      await loader.dispose();
    },
  };
}
