import { Readable } from 'node:stream';
import type { Document } from 'grammy/types';
import type { Logger } from 'pino';
import type { Principal } from '../accounts/principal.ts';
import type { UsageLimits } from '../accounts/usage-limits.ts';
import {
  type IngestAccess,
  type IngestionService,
  LINE_FULL,
  type UploadPart,
} from '../documents/ingestion-service.ts';
import { AppError } from '../errors.ts';
import type { Incoming } from './incoming.ts';
import { overLimitText, sendReply } from './send-reply.ts';
import { callFailure, type TelegramApi } from './telegram-api.ts';
import { textsFor } from './telegram-texts.ts';

/** The Bot API's download limit (getFile). */
export const BOT_API_DOWNLOAD_MAX_BYTES = 20 * 1_048_576;

export interface DocumentDoorDependencies {
  telegram: TelegramApi;
  ingestion: Pick<IngestionService, 'ingest'>;
  limits: Pick<UsageLimits, 'admitIngest'>;
  /** INGEST_MAX_BYTES. */
  maxBytes: number;
  logger: Logger;
}

/**
 * A document sent to the bot becomes the user's private document, through the same pipeline
 * (and limits) as `POST /ingest`; the user is told when it is searchable, or why not.
 */
export class DocumentDoor {
  readonly #deps: DocumentDoorDependencies;

  constructor(deps: DocumentDoorDependencies) {
    this.#deps = deps;
  }

  async ingest(incoming: Incoming, document: Document, log: Logger): Promise<void> {
    const { telegram } = this.#deps;
    const { chatId, userId, language } = incoming;
    const t = textsFor(language);
    const maxBytes = Math.min(this.#deps.maxBytes, BOT_API_DOWNLOAD_MAX_BYTES);
    const tooBig = t.tooBig(Math.floor(maxBytes / 1_048_576));
    if ((document.file_size ?? 0) > maxBytes) return sendReply(telegram, chatId, tooBig, log);
    void telegram.bestEffort.sendChatAction(chatId, 'upload_document').catch(() => {});
    const principal: Principal = { kind: 'user', userId, keyId: undefined };
    const access: IngestAccess = {
      owner: () => userId,
      admit: (owner, bytes, source) =>
        this.#deps.limits.admitIngest(principal, owner, bytes, source),
    };
    let text: string;
    try {
      const file = await telegram.reliable.getFile(document.file_id);
      if (!file.file_path) throw new Error('getFile named no file_path');
      const bytes = await telegram.download(file.file_path, maxBytes, file.file_size);
      const filename = document.file_name || 'document';
      const result = await this.#deps.ingestion.ingest(parts(filename, bytes), access);
      log.info({ chunks: result.chunks }, 'Telegram document ingested');
      text = t.ingested(result.source, result.chunks);
    } catch (error) {
      if (callFailure(error)?.status === 413) {
        await sendReply(telegram, chatId, tooBig, log);
        return;
      }
      if (!AppError.isInstance(error)) {
        log.error({ err: error, status: callFailure(error)?.status }, 'Telegram document failed');
        await sendReply(telegram, chatId, t.busy, log);
        return;
      }
      log.info({ code: error.code }, 'Telegram document refused');
      if (error.code === 'password_required' || error.code === 'password_wrong') {
        text = t.encrypted;
      } else if (error.status === 413) {
        text = tooBig;
      } else if (error.code === LINE_FULL.code) {
        text = t.ingestBusy;
      } else {
        text = overLimitText(error, language) ?? t.ingestFailed(error.message);
      }
    }
    await sendReply(telegram, chatId, text, log);
  }
}

async function* parts(filename: string, bytes: Buffer): AsyncGenerator<UploadPart> {
  yield { type: 'file', fieldname: 'file', filename, stream: Readable.from([bytes]) };
}
