import type { LanguageModel } from 'ai';
import type { ModelStatus } from './model-status.ts';

/**
 * The text model that answers chats. `get()` may do slow work on first use (loading or
 * downloading embedded weights), which is why it is not resolved at start-up.
 */
export interface ChatModel {
  /** Recorded with every run, e.g. `openai-compatible:qwen2.5:7b`. */
  readonly id: string;
  get(): Promise<LanguageModel>;
  /**
   * The model as the chat's tool loop reads it, where that differs from `get()`: without
   * stream middleware (each one is another web-stream stage on every token), and the tag in
   * which the model writes its reasoning inside its text, for the loop to split out as it
   * reads (reasoning-tag-splitter.ts). Default: `get()`, no tag.
   */
  getForChat?(): Promise<{ model: LanguageModel; reasoningTag?: string }>;
  /** Where the model stands (GET /health): ready, downloading, failed. */
  status(): ModelStatus;
  /**
   * Starts what the first chat would otherwise wait for (the embedded model's download), in
   * the background, and returns at once; `onDownloading` is called if a download begins.
   */
  prepare?(onDownloading?: () => void): void;
  /** Frees what `get` loaded (embedded weights), at shutdown. */
  dispose?(): Promise<void>;
}

/** No model can be used: not configured, or the embedded one could not be obtained. */
export class ModelNotConfiguredError extends Error {
  override readonly name = 'ModelNotConfiguredError';
}
