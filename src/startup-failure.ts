import type { Config } from './config.ts';

/**
 * The exit code of a cluster worker that failed to start for a reason another worker would
 * meet too (EX_CONFIG of sysexits.h): the primary stops instead of replacing it forever.
 */
export const CANNOT_START_EXIT_CODE = 78;

/**
 * Whether trying again cannot help until the operator changes something. A database server
 * that is down, starting or full may be back in a moment: workers keep being replaced then.
 */
export function isLastingStartupFailure(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | undefined)?.code ?? '';
  if (CONNECTION_CODES.has(code) || /^(53|57)/.test(code)) return false;
  return !(error instanceof Error && /connection timeout/i.test(error.message));
}

/**
 * One line for a start-up failure that is the operator's to fix (the port, the data directory,
 * the database server), naming the setting involved; undefined for anything else, which is a
 * defect of Parley and keeps its stack. Never the database password: it is in DATABASE_URL.
 */
export function describeStartupFailure(
  error: unknown,
  config: Pick<Config, 'HOST' | 'PORT' | 'DATA_DIR' | 'DATABASE_URL'>,
): string | undefined {
  if (!(error instanceof Error)) return undefined;
  const { code, syscall, path } = error as NodeJS.ErrnoException;
  // Fastify resolves HOST before it listens: a name that does not resolve fails there.
  if (syscall === 'getaddrinfo' && (error as { hostname?: string }).hostname === config.HOST) {
    return `HOST=${config.HOST} is not a name this machine can resolve (${code}): set HOST to an address of this machine, such as 127.0.0.1 or 0.0.0.0`;
  }
  if (syscall === 'listen') {
    const where = `${config.HOST}:${config.PORT}`;
    if (code === 'EADDRINUSE')
      return `${where} is in use by another process: stop it, or set PORT to another port`;
    if (code === 'EADDRNOTAVAIL')
      return `HOST=${config.HOST} is not an address of this machine: set HOST to one of its addresses, or 0.0.0.0`;
    if (code === 'EACCES')
      return `${where} may not be served by this user (ports below 1024 need privileges): set PORT to 1024 or above`;
    return undefined;
  }
  if (typeof path === 'string' && typeof code === 'string' && FILE_CODES.has(code)) {
    return `DATA_DIR=${config.DATA_DIR} cannot be used: ${path}: ${FILE_CODES.get(code)} (${code})`;
  }
  if (config.DATABASE_URL) {
    const server = serverOf(config.DATABASE_URL);
    if (CONNECTION_CODES.has(code ?? '') || /connection timeout/i.test(error.message)) {
      return `cannot reach the PostgreSQL server of DATABASE_URL at ${server} (${code ?? 'timeout'}): is it running, and is the address right?`;
    }
    // The server's own words for a refused connection name the role or the database, never
    // the password; other SQL errors are kept to their code.
    if (typeof code === 'string' && /^(28|3D|53|57)/.test(code)) {
      return `the PostgreSQL server of DATABASE_URL (${server}) refused the connection: ${error.message} (${code})`;
    }
  }
  return undefined;
}

const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);

const FILE_CODES = new Map([
  ['EEXIST', 'a file is there, not a directory'],
  ['ENOTDIR', 'a part of the path is a file, not a directory'],
  ['EACCES', 'permission denied'],
  ['EPERM', 'permission denied'],
  ['EROFS', 'the file system is read-only'],
  ['ENOSPC', 'the disk is full'],
]);

/** host:port of a database URL, without its user or password. */
function serverOf(databaseUrl: string): string {
  const url = new URL(databaseUrl);
  return `${url.hostname || 'localhost'}:${url.port || '5432'}`;
}
