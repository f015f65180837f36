import { createReadStream, type Stats } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline, Readable } from 'node:stream';
import { createGzip } from 'node:zlib';
import { Header } from 'tar';

/** The directory of a backup's copy that holds the data directory, and the archive's top name. */
export const BACKUP_TOP = 'pg';
const BLOCK = 512;

/**
 * A backup as a gzipped tar, made from its copy while it is sent: a file is read a chunk at a
 * time, and only as fast as the client takes it, so memory does not grow with the database.
 * Every entry sits under one top-level name, which restore strips, as it strips the empty one
 * ("/PG_VERSION") of the archives PGlite built in memory before, which restore still reads.
 *
 * Not tar's own `Pack`: destroyed while a client leaves mid-download, it keeps the files it was
 * reading open, and a deleted copy's disk space stays taken until the process exits. Here a
 * destroyed archive ends the generator, which closes the file it reads.
 */
export function backupArchive(copyRoot: string): Readable {
  const gzip = createGzip();
  const entries = Readable.from(tarOf(copyRoot), { objectMode: false });
  // Destroys both on an error of either, or on the archive's being destroyed (a client gone).
  pipeline(entries, gzip, () => {});
  return gzip;
}

async function* tarOf(copyRoot: string): AsyncGenerator<Buffer> {
  yield* entry(copyRoot, BACKUP_TOP);
  yield Buffer.alloc(2 * BLOCK); // the end of the archive
}

async function* entry(root: string, name: string): AsyncGenerator<Buffer> {
  const path = join(root, name);
  const info = await stat(path);
  if (info.isDirectory()) {
    yield header(`${name}/`, info, 'Directory', 0);
    for (const child of (await readdir(path)).sort()) yield* entry(root, `${name}/${child}`);
    return;
  }
  yield header(name, info, 'File', info.size);
  let read = 0;
  for await (const chunk of createReadStream(path)) {
    read += (chunk as Buffer).length;
    yield chunk as Buffer;
  }
  // The copy is nobody else's: a size that changed means a broken copy, not a busy database.
  if (read !== info.size) throw new Error(`${path} changed size while it was archived`);
  if (info.size % BLOCK) yield Buffer.alloc(BLOCK - (info.size % BLOCK));
}

function header(path: string, info: Stats, type: 'File' | 'Directory', size: number): Buffer {
  const block = Buffer.alloc(BLOCK);
  const needsPax = new Header({
    path,
    type,
    size,
    mode: info.mode & 0o7777,
    mtime: info.mtime,
    uid: 0,
    gid: 0,
  }).encode(block);
  // A data directory's paths are short ("pg/base/16384/2619_fsm"); a longer one would need a
  // pax header, which no PGlite data directory has given cause to write.
  if (needsPax) throw new Error(`${path} cannot be named in a plain tar header`);
  return block;
}
