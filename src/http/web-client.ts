import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { extname, join } from 'node:path';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { App } from './app-types.ts';

/**
 * The page's own policy: its scripts, styles, images and API calls come from this origin
 * only (no inline script, no CDN, no third party), it cannot be framed, and a link in an
 * answer cannot carry the page's address away.
 */
export const WEB_CLIENT_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: blob:",
  "connect-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

export interface WebFile {
  body: Buffer;
  br: Buffer | undefined;
  gzip: Buffer | undefined;
  type: string;
  /** Hashed file names never change content: cached for a year. */
  immutable: boolean;
}

export type WebClientFiles = Map<string, WebFile>;

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.json': 'application/json',
};

/**
 * Reads the built web client (web/dist, made by web/build.ts) into memory: a few files of
 * tens of kilobytes, each with the brotli and gzip forms the build wrote beside it.
 * Undefined when it has not been built.
 */
export async function loadWebClient(dir: string): Promise<Map<string, WebFile> | undefined> {
  if (!existsSync(join(dir, 'index.html'))) return undefined;
  const files = new Map<string, WebFile>();
  const names = await readdir(dir, { recursive: true });
  for (const name of names) {
    const type = TYPES[extname(name)];
    if (!type) continue;
    const path = join(dir, name);
    const optional = (suffix: string) =>
      existsSync(path + suffix) ? readFile(path + suffix) : Promise.resolve(undefined);
    files.set(`/${name.split('\\').join('/')}`, {
      body: await readFile(path),
      br: await optional('.br'),
      gzip: await optional('.gz'),
      type,
      immutable: name.startsWith('assets/'),
    });
  }
  return files;
}

/** Serves the page at `/` and its assets under `/assets/`, public (signing in is the page's job). */
export function registerWebClient(app: App, files: Map<string, WebFile> | undefined): void {
  const config = { public: true };
  const schema = { hide: true };
  app.get('/', { config, schema }, async (request, reply) => {
    const index = files?.get('/index.html');
    if (!index) {
      return reply
        .code(503)
        .type('text/plain; charset=utf-8')
        .send('The web client is not built: run `npm install` (or `node web/build.ts`).\n');
    }
    return send(request, reply, index);
  });
  app.get('/assets/*', { config, schema }, async (request, reply) => {
    const file = files?.get(`/assets/${(request.params as { '*': string })['*']}`);
    if (!file) return reply.code(404).send({ detail: 'Not Found' });
    return send(request, reply, file);
  });
}

function send(request: FastifyRequest, reply: FastifyReply, file: WebFile) {
  const accepted = String(request.headers['accept-encoding'] ?? '');
  reply
    .type(file.type)
    .header('vary', 'accept-encoding')
    .header('content-security-policy', WEB_CLIENT_CSP)
    .header('x-frame-options', 'DENY')
    .header('cache-control', file.immutable ? 'public, max-age=31536000, immutable' : 'no-cache');
  if (file.br && /\bbr\b/.test(accepted))
    return reply.header('content-encoding', 'br').send(file.br);
  if (file.gzip && /\bgzip\b/.test(accepted)) {
    return reply.header('content-encoding', 'gzip').send(file.gzip);
  }
  return reply.send(file.body);
}
