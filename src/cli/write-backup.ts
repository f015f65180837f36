import { existsSync, rmSync } from 'node:fs';
import { link, open, rename, rm } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { fileProblem } from '../file-problem.ts';

/** An exit code a shell reads as "stopped by this signal" (128 + its number). */
const SIGNALS = { SIGINT: 130, SIGTERM: 143, SIGHUP: 129 } as const;

/**
 * Writes the backup `fetchBackup` answers with to `file`, which is never a part of one: the
 * bytes go to `<file>.partial` and take the file's name only once all are on disk. A backup
 * stopped midway (Ctrl-C, a full disk, Parley stopping) leaves nothing under the name, where an
 * operator would take a cut-off archive for a backup, and the next run would refuse to replace it.
 */
export async function writeBackup(
  file: string,
  fetchBackup: () => Promise<{ body: ReadableStream<Uint8Array> | null }>,
): Promise<void> {
  const cannot = (why: string) => new Error(`cannot write the backup to ${file}: ${why}`);
  // Checked first: a backup is the whole database, not to be taken and then dropped because
  // its file exists already or cannot be written.
  if (existsSync(file)) throw cannot(fileProblem({ code: 'EEXIST' }));
  const partial = `${file}.partial`;
  const handle = await open(partial, 'wx', 0o600).catch((error: NodeJS.ErrnoException) => {
    throw cannot(
      error.code === 'EEXIST'
        ? `${partial} is there, left by a backup that was stopped: remove it`
        : fileProblem(error),
    );
  });
  const interrupted = (signal: keyof typeof SIGNALS) => {
    rmSync(partial, { force: true });
    process.stderr.write(`parley admin: backup stopped (${signal}); nothing written to ${file}\n`);
    process.exit(SIGNALS[signal]);
  };
  const signals = Object.keys(SIGNALS) as (keyof typeof SIGNALS)[];
  for (const signal of signals) process.once(signal, interrupted);
  const shown = progress();
  try {
    const response = await fetchBackup();
    await pipeline(
      Readable.fromWeb(response.body as never),
      async function* (chunks: AsyncIterable<Buffer>) {
        for await (const chunk of chunks) {
          shown.wrote(chunk.length);
          yield chunk;
        }
      },
      // flush: on disk (fsync) before it is called a backup; the stream closes the handle.
      handle.createWriteStream({ flush: true }),
    ).catch((error: NodeJS.ErrnoException) => {
      // fs errors name their system call; the download's own ends ("terminated") do not.
      if (error.syscall) throw cannot(`${fileProblem(error)}; nothing of it was kept`);
      throw new Error(
        'the backup was cut off before its end: Parley stopped sending it (its log says why); ' +
          `nothing was written to ${file}`,
      );
    });
    await claimName(partial, file).catch((error: NodeJS.ErrnoException) => {
      throw cannot(fileProblem(error));
    });
  } catch (error) {
    await handle.close().catch(() => {});
    await rm(partial, { force: true });
    throw error;
  } finally {
    shown.end();
    for (const signal of signals) process.off(signal, interrupted);
  }
}

/**
 * What a person at a terminal sees while a backup lasts, minutes for a large database: first
 * that Parley is copying it (no byte comes meanwhile), then how much is written, on one line
 * redrawn each second. Nothing when stderr is not a terminal (cron, scripts), whose mail or
 * log would fill with it.
 */
function progress(): { wrote(bytes: number): void; end(): void } {
  const terminal = process.stderr;
  if (!terminal.isTTY) return { wrote() {}, end() {} };
  let written = 0;
  const draw = (text: string) => terminal.write(`\r\x1b[2K${text}`);
  draw('backup: Parley is copying the database (it goes on serving)…');
  const drawWritten = () => draw(`backup: ${(written / 1024 / 1024).toFixed(1)} MB written…`);
  const every = setInterval(() => written > 0 && drawWritten(), 1_000);
  return {
    wrote: (bytes) => {
      // The first bytes end the copy: said at once, not at the next second.
      if (written === 0) drawWritten();
      written += bytes;
    },
    end: () => {
      clearInterval(every);
      draw('');
    },
  };
}

/**
 * Gives the finished backup its name, unless something took that name meanwhile: a hard link
 * fails rather than replaces, which a rename would not. A filesystem without hard links gets
 * the rename, after one more look.
 */
async function claimName(partial: string, file: string): Promise<void> {
  try {
    await link(partial, file);
    await rm(partial);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST' || existsSync(file)) throw error;
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP') throw error;
    await rename(partial, file);
  }
}
