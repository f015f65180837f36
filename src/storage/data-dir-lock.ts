import { createHash } from 'node:crypto';
import { existsSync, readFileSync, realpathSync, unlinkSync, writeFileSync } from 'node:fs';
import { connect, createServer, type Server } from 'node:net';
import { join } from 'node:path';

/**
 * PGlite has no lock of its own: two processes opening one data directory both succeed and
 * silently lose writes. Parley therefore holds an exclusive lock for its lifetime.
 *
 * On Linux the lock is an abstract-namespace Unix socket named after the directory: binding
 * is atomic and the kernel releases it the moment the process dies, so a crash never leaves
 * a stale lock behind. The holder answers connections with its pid, which makes the refusal
 * message useful. Elsewhere an exclusive-create pid file is used.
 */

export class DataDirLockedError extends Error {
  override readonly name = 'DataDirLockedError';
}

export interface DataDirLock {
  release(): Promise<void>;
}

export async function lockDataDir(dir: string): Promise<DataDirLock> {
  const canonical = realpathSync(dir);
  return process.platform === 'linux'
    ? lockWithAbstractSocket(canonical)
    : lockWithPidFile(canonical);
}

function refusal(dir: string, holder: string): DataDirLockedError {
  return new DataDirLockedError(
    `The data directory ${dir} is already in use by ${holder}. ` +
      'Stop that process, or set DATA_DIR to another directory.',
  );
}

async function lockWithAbstractSocket(dir: string): Promise<DataDirLock> {
  const name = `\0parley-data-${createHash('sha256').update(dir).digest('hex').slice(0, 32)}`;
  const server: Server = createServer((socket) => {
    // Anyone on the machine may ask; one that leaves before the answer fails its write
    // (EPIPE, ECONNRESET), which unheard would end this process. Nothing is lost.
    socket.on('error', () => socket.destroy());
    socket.end(`process ${process.pid}`);
  });
  server.unref();
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      // exclusive: in a cluster worker a plain listen is done by the primary and shared, so
      // every worker "got" the lock; this binds the socket in this very process.
      server.listen({ path: name, exclusive: true }, () => resolve());
    });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw error;
    throw refusal(dir, await askHolder(name));
  }
  return { release: () => new Promise((resolve) => server.close(() => resolve())) };
}

function askHolder(name: string): Promise<string> {
  return new Promise((resolve) => {
    let answer = '';
    const socket = connect(name);
    socket.setTimeout(1000, () => socket.destroy());
    socket.on('data', (chunk) => {
      answer += chunk.toString('utf8');
    });
    socket.on('close', () => resolve(answer || 'another Parley process'));
    socket.on('error', () => resolve('another Parley process'));
  });
}

function lockWithPidFile(dir: string): DataDirLock {
  const file = join(dir, 'parley.lock');
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(file, String(process.pid), { flag: 'wx' });
      return {
        release: async () => {
          if (existsSync(file)) unlinkSync(file);
        },
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const pid = Number(readFileSync(file, 'utf8'));
      if (isAlive(pid)) throw refusal(dir, `process ${pid}`);
      unlinkSync(file); // left behind by a process that died
    }
  }
  throw refusal(dir, 'another Parley process');
}

function isAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
