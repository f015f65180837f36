/**
 * Builds the web client (web/src) into web/dist: one JavaScript and one CSS file with hashed
 * names, index.html, and brotli and gzip copies of each for the server to send as they are.
 * Run by `npm install` (the `prepare` script) and by `npm start` when web/dist is missing or
 * older than its sources; `node web/build.ts` does it by hand.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';

const WEB = dirname(fileURLToPath(import.meta.url));
export const WEB_DIST = join(WEB, 'dist');
const SOURCES = join(WEB, 'src');

export interface BuiltFile {
  name: string;
  bytes: number;
  brotli: number;
  gzip: number;
}

/** Whether web/dist holds a build at least as new as every source file (and this script). */
export function webClientIsCurrent(): boolean {
  const manifest = join(WEB_DIST, 'manifest.json');
  if (!existsSync(manifest)) return false;
  const builtAt = statSync(manifest).mtimeMs;
  const newest = (dir: string): number => {
    let latest = 0;
    for (const entry of readdirSyncSafe(dir)) {
      const path = join(dir, entry);
      const info = statSync(path);
      latest = Math.max(latest, info.isDirectory() ? newest(path) : info.mtimeMs);
    }
    return latest;
  };
  return Math.max(newest(SOURCES), statSync(fileURLToPath(import.meta.url)).mtimeMs) <= builtAt;
}

function readdirSyncSafe(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/** Whether this checkout has the web client's sources (a Docker layer may not have them yet). */
export const hasWebSources = () => existsSync(join(SOURCES, 'main.tsx'));

/**
 * Builds into a fresh directory beside web/dist and swaps it in, so a server starting
 * meanwhile (tests start several at once) never reads half a build.
 */
export async function buildWebClient(): Promise<BuiltFile[]> {
  const esbuild = await import('esbuild');
  const staging = `${WEB_DIST}.${process.pid}.${Date.now()}`;
  const result = await esbuild.build({
    entryPoints: [join(SOURCES, 'main.tsx')],
    bundle: true,
    minify: true,
    format: 'esm',
    target: ['chrome111', 'firefox115', 'safari16'],
    jsx: 'automatic',
    jsxImportSource: 'preact',
    define: { 'process.env.NODE_ENV': '"production"' },
    entryNames: 'assets/[name]-[hash]',
    assetNames: 'assets/[name]-[hash]',
    legalComments: 'eof',
    outdir: staging,
    metafile: true,
    write: true,
    logLevel: 'warning',
  });
  const outputs = Object.keys(result.metafile.outputs).map((path) => relative(staging, path));
  const script = outputs.find((name) => name.endsWith('.js'));
  const style = outputs.find((name) => name.endsWith('.css'));
  if (!script || !style) throw new Error(`the build made no script or no style: ${outputs}`);
  await writeFile(join(staging, 'index.html'), indexHtml(script, style));

  const files: BuiltFile[] = [];
  for (const name of [...outputs, 'index.html']) {
    const path = join(staging, name);
    const body = await readFile(path);
    const br = brotliCompressSync(body, {
      params: {
        [constants.BROTLI_PARAM_QUALITY]: 11,
        [constants.BROTLI_PARAM_SIZE_HINT]: body.length,
      },
    });
    const gz = gzipSync(body, { level: 9 });
    await writeFile(`${path}.br`, br);
    await writeFile(`${path}.gz`, gz);
    files.push({ name, bytes: body.length, brotli: br.length, gzip: gz.length });
  }
  // Written last: its time stamp is what "built" means to webClientIsCurrent.
  await writeFile(join(staging, 'manifest.json'), `${JSON.stringify({ files }, null, 2)}\n`);

  const old = `${staging}.old`;
  if (existsSync(WEB_DIST)) await rename(WEB_DIST, old).catch(() => undefined);
  try {
    await rename(staging, WEB_DIST);
  } catch {
    await rm(staging, { recursive: true, force: true }); // another process swapped its build in
  }
  await rm(old, { recursive: true, force: true });
  return files;
}

function indexHtml(script: string, style: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>Parley</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/${style}">
<script type="module" src="/${script}"></script>
</head>
<body>
<div id="app"></div>
<noscript>Parley's web client needs JavaScript.</noscript>
</body>
</html>
`;
}

/** Sizes of the files the first load of `/` fetches, as sent (brotli). */
export function describe(files: BuiltFile[]): string {
  const kb = (n: number) => `${(n / 1024).toFixed(1)} KB`;
  const lines = files.map(
    (f) => `  ${f.name}: ${kb(f.bytes)} (brotli ${kb(f.brotli)}, gzip ${kb(f.gzip)})`,
  );
  const code = files.filter((f) => /\.(js|css)$/.test(f.name));
  const total = (key: 'brotli' | 'gzip') => kb(code.reduce((sum, f) => sum + f[key], 0));
  return `${lines.join('\n')}\n  JavaScript + CSS: brotli ${total('brotli')}, gzip ${total('gzip')}`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (!hasWebSources()) {
    console.log('web client: no sources in this checkout (web/src); nothing to build');
  } else {
    const started = performance.now();
    const files = await buildWebClient();
    console.log(
      `web client built in ${Math.round(performance.now() - started)} ms:\n${describe(files)}`,
    );
  }
}
