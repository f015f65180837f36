import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { AppError } from '../errors.ts';

export interface ReceivedFile {
  path: string;
  bytes: number;
  /** The first bytes, for type detection without reading the file again. */
  head: Uint8Array;
}

/**
 * The temporary file's name: a random id plus the upload's extension when it is plain
 * (letters and digits, ≤ 16), `.bin` otherwise. Nothing else of the client's name reaches the
 * file system, so `../`, absolute paths, NUL and 4 KB names cannot leave the uploads folder.
 */
export function temporaryName(filename: string): string {
  const extension = /\.([A-Za-z0-9]{1,16})$/.exec(filename)?.[1];
  return `${randomUUID()}.${extension ? extension.toLowerCase() : 'bin'}`;
}

/**
 * Streams an upload into `dir`. The stream stops at `maxBytes` (the multipart parser signals
 * the limit there): the partial file is removed and 413 thrown at once. On any failure, a
 * client's abort included, the file is removed before the error propagates.
 */
export async function receiveUpload(
  stream: Readable & { truncated?: boolean },
  dir: string,
  filename: string,
  options: { maxBytes: number; headBytes: number },
): Promise<ReceivedFile> {
  const path = join(dir, temporaryName(filename));
  let bytes = 0;
  const headChunks: Buffer[] = [];
  let headLength = 0;
  stream.on('data', (chunk: Buffer) => {
    bytes += chunk.length;
    if (headLength < options.headBytes) {
      headChunks.push(chunk);
      headLength += chunk.length;
    }
  });
  const tooLarge = () =>
    new AppError(
      'upload_too_large',
      413,
      `The file is larger than ${options.maxBytes} bytes (INGEST_MAX_BYTES).`,
    );
  // The parser emits 'limit' when the file reaches maxBytes, but ends the stream only when the
  // part ends: stop here, or an upload declared far larger would be read to its end first.
  stream.once('limit', () => stream.destroy(tooLarge()));
  try {
    await pipeline(stream, createWriteStream(path, { flags: 'wx' }));
    if (stream.truncated || bytes > options.maxBytes) throw tooLarge();
  } catch (error) {
    await rm(path, { force: true });
    throw error;
  }
  const head = Buffer.concat(headChunks).subarray(0, options.headBytes);
  return { path, bytes, head: new Uint8Array(head.buffer, head.byteOffset, head.byteLength) };
}
