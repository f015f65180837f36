import { randomUUID } from 'node:crypto';
import { rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { RequestImage } from '../assistant/chat-events.ts';
import type { Config } from '../config.ts';
import type { ImageMediaType } from './image-type.ts';

/**
 * A request's image on disk, removed by `dispose` (idempotent; it never rejects: a file that
 * cannot be removed is logged, and lies in the temporary directory for the system to clear).
 */
export interface StoredImage extends RequestImage {
  dispose(): Promise<void>;
}

export interface ImageIntake {
  /** Why images are refused (vision off or without a model), or undefined when accepted. */
  readonly refusal: string | undefined;
  /** Writes the decoded image to its own temporary file (spec rule 3), readable by us only. */
  save(bytes: Buffer, mediaType: ImageMediaType): Promise<StoredImage>;
}

const EXTENSIONS: Record<ImageMediaType, string> = {
  'image/png': '.png',
  'image/jpeg': '.jpg',
  'image/gif': '.gif',
  'image/webp': '.webp',
};

/** Temporary image files are named with this prefix in the system's temporary directory. */
export const IMAGE_FILE_PREFIX = 'parley-image-';

export function createImageIntake(
  config: Pick<Config, 'VISION_ENABLED' | 'VISION_MODEL_ID' | 'VISION_BASE_URL' | 'LLM_BASE_URL'>,
  logger: Pick<Logger, 'warn'>,
  directory = tmpdir(),
): ImageIntake {
  return {
    refusal: visionRefusal(config),
    async save(bytes, mediaType) {
      const path = join(directory, `${IMAGE_FILE_PREFIX}${randomUUID()}${EXTENSIONS[mediaType]}`);
      await writeFile(path, bytes, { mode: 0o600, flag: 'wx' });
      let removed: Promise<void> | undefined;
      return {
        path,
        mediaType,
        bytes: bytes.length,
        dispose: () => {
          // Called where nobody awaits it (a stream that closed): a removal that failed (a
          // disk turned read-only) must not be an unhandled rejection, which ends the process.
          removed ??= rm(path, { force: true }).catch((error: unknown) =>
            logger.warn(
              { err: error, code: 'image_file_not_removed' },
              "a request's image file could not be removed",
            ),
          );
          return removed;
        },
      };
    },
  };
}

/** Says what to set when an image cannot be analysed. */
export function visionRefusal(
  config: Pick<Config, 'VISION_ENABLED' | 'VISION_MODEL_ID' | 'VISION_BASE_URL' | 'LLM_BASE_URL'>,
): string | undefined {
  if (!config.VISION_ENABLED) {
    return 'Images are not accepted: image understanding is disabled. Set VISION_ENABLED=true and VISION_MODEL_ID (and VISION_BASE_URL) to enable it.';
  }
  if (!config.VISION_MODEL_ID) {
    return 'Images are not accepted: image understanding has no model. Set VISION_MODEL_ID to a vision model of the server at VISION_BASE_URL.';
  }
  if (!config.VISION_BASE_URL && !config.LLM_BASE_URL) {
    return 'Images are not accepted: image understanding has no model server. Set VISION_BASE_URL (or LLM_BASE_URL) to an OpenAI-compatible server with a vision model.';
  }
  return undefined;
}
