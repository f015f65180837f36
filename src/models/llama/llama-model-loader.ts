import type { ChildProcess } from 'node:child_process';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import {
  type ChatWrapper,
  getLlama,
  type Llama,
  type LlamaContext,
  LlamaLogLevel,
  type LlamaModel,
  resolveChatWrapper,
} from 'node-llama-cpp';
import type { Logger } from 'pino';
import { createSequencePool, type SequencePool } from './sequence-pool.ts';

export type LlamaModelLoaderOptions = {
  /**
   * GGUF path, or a function that produces it on first use (e.g. a download); its signal is
   * aborted by `dispose`, so shutting down does not wait for a download to finish.
   */
  modelPath: string | ((signal: AbortSignal) => Promise<string>);
  logger: Logger;
  /** Tokens of context per sequence (default 8192). */
  contextSize?: number;
  /**
   * CPU threads per evaluation (default: node-llama-cpp's, the math cores).
   * llama.cpp threads spin-wait on each other: on an oversubscribed machine a
   * small model is far faster with 1.
   */
  threads?: number;
};

export type LoadedLlama = {
  llama: Llama;
  model: LlamaModel;
  context: LlamaContext;
  chatWrapper: ChatWrapper;
  sequences: SequencePool;
};

export type LlamaModelLoader = {
  /** Loads once and shares; a failed load is retried by the next call. */
  load(): Promise<LoadedLlama>;
  dispose(): Promise<void>;
};

const LOG_LEVELS: Partial<Record<LlamaLogLevel, 'error' | 'warn' | 'info' | 'debug'>> = {
  [LlamaLogLevel.fatal]: 'error',
  [LlamaLogLevel.error]: 'error',
  [LlamaLogLevel.warn]: 'warn',
  [LlamaLogLevel.info]: 'debug',
  [LlamaLogLevel.log]: 'debug',
  [LlamaLogLevel.debug]: 'debug',
};

async function loadLlama(
  options: LlamaModelLoaderOptions,
  signal: AbortSignal,
): Promise<LoadedLlama> {
  const log = options.logger;
  const modelPath =
    typeof options.modelPath === 'string' ? options.modelPath : await options.modelPath(signal);
  const started = Date.now();
  const llama = await withChildrenHeard(log, () =>
    getLlama({
      gpu: false, // the prebuilt CPU binary: GPU builds are not installed (package.json overrides)
      build: 'never', // never fetch or compile llama.cpp at run time: use the prebuilt binary
      progressLogs: false,
      logLevel: LlamaLogLevel.warn,
      logger: (level, message) => {
        const to = LOG_LEVELS[level];
        if (to) log[to]({ llamaCpp: level }, message.trim());
      },
    }),
  );
  try {
    const model = await llama.loadModel({ modelPath });
    const context = await model.createContext({
      contextSize: options.contextSize ?? 8192,
      sequences: 1, // one conversation at a time: each more costs its own KV cache
      ...(options.threads === undefined ? {} : { threads: options.threads }),
    });
    // Resolving compares the GGUF's Jinja template with every known wrapper:
    // seconds of CPU, so it is done once per model, not per call.
    const chatWrapper = resolveChatWrapper(model);
    log.info(
      {
        modelPath,
        gpu: llama.gpu,
        contextSize: context.contextSize,
        sequences: context.totalSequences,
        chatWrapper: chatWrapper.wrapperName,
        ms: Date.now() - started,
      },
      'embedded model loaded',
    );
    return { llama, model, context, chatWrapper, sequences: createSequencePool(context) };
  } catch (error) {
    await llama.dispose();
    throw error;
  }
}

/**
 * On Linux getLlama tests the prebuilt llama.cpp binary in a child process it forks, at every
 * load, and listens for no 'error' on it: a message to a test process that had just died
 * (EPIPE; killed, out of memory) or a fork that failed (no file descriptors or processes left)
 * was emitted unheard, and Node ended Parley on the first chat. Every child process started
 * while `work` runs gets a listener (published before it is spawned); node-llama-cpp then sees
 * the test process exit, the binary test fails, and so does that load: the next chat loads again.
 */
async function withChildrenHeard<T>(log: Logger, work: () => Promise<T>): Promise<T> {
  const onChild = (message: unknown) =>
    (message as { process: ChildProcess }).process.on('error', (error) =>
      log.warn(
        { err: error, code: 'child_process_failed' },
        'a child process started while loading the embedded model failed',
      ),
    );
  subscribe('child_process', onChild);
  try {
    return await work();
  } finally {
    unsubscribe('child_process', onChild);
  }
}

export function createLlamaModelLoader(options: LlamaModelLoaderOptions): LlamaModelLoader {
  let loading: Promise<LoadedLlama> | undefined;
  let stop = new AbortController();
  return {
    load() {
      loading ??= loadLlama(options, stop.signal).catch((error: unknown) => {
        loading = undefined;
        throw error;
      });
      return loading;
    },
    async dispose() {
      const current = loading;
      loading = undefined;
      stop.abort(new Error('the embedded model is being disposed'));
      stop = new AbortController();
      if (!current) return;
      const loaded = await current.catch(() => undefined);
      await loaded?.llama.dispose(); // disposes its models and contexts too
    },
  };
}
