import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * Installs one package at an exact version into its own scratch prefix under the temp
 * directory, outside the repository, so a benchmark can try a library Parley does not depend
 * on without touching package.json. The prefix is kept: a second run reuses it.
 */
export interface ScratchPackage {
  name: string;
  version: string;
  /** The prefix it lives in (`<tmp>/parley-bench-packages/<name>@<version>`). */
  dir: string;
  /** Packages installed with it (itself and everything it pulls in). */
  packages: number;
  /** Bytes on disk of its node_modules. */
  bytes: number;
}

export function installScratch(name: string, version: string): ScratchPackage {
  const dir = join(tmpdir(), 'parley-bench-packages', `${name}@${version}`);
  const manifest = join(dir, 'node_modules', name, 'package.json');
  const installed = existsSync(manifest) && readJson(manifest).version === version;
  if (!installed) {
    mkdirSync(dir, { recursive: true });
    // Its own package.json, or npm walks up and installs into whatever project encloses it.
    writeFileSync(join(dir, 'package.json'), '{"private":true}\n');
    execFileSync(
      'npm',
      ['install', '--prefix', dir, '--no-audit', '--no-fund', `${name}@${version}`],
      { stdio: ['ignore', 'ignore', 'inherit'] },
    );
  }
  const modules = join(dir, 'node_modules');
  return { name, version, dir, packages: countPackages(modules), bytes: diskBytes(modules) };
}

/** `import()` of the package's entry point from its scratch prefix. */
export async function importScratch<T>(pkg: Pick<ScratchPackage, 'name' | 'dir'>): Promise<T> {
  const root = join(pkg.dir, 'node_modules', pkg.name);
  const manifest = readJson(join(root, 'package.json'));
  const entry = typeof manifest.exports === 'string' ? manifest.exports : manifest.main;
  return (await import(pathToFileURL(join(root, String(entry ?? 'index.js'))).href)) as T;
}

const readJson = (path: string) =>
  JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;

function countPackages(modules: string): number {
  let count = 0;
  for (const entry of readdirSync(modules)) {
    if (entry.startsWith('.')) continue;
    if (entry.startsWith('@')) count += readdirSync(join(modules, entry)).length;
    else count++;
    // Nested copies (a second version of a dependency) count too.
    const nested = join(modules, entry, 'node_modules');
    if (!entry.startsWith('@') && existsSync(nested)) count += countPackages(nested);
  }
  return count;
}

function diskBytes(path: string): number {
  const stat = statSync(path, { throwIfNoEntry: false });
  if (!stat) return 0;
  if (!stat.isDirectory()) return stat.size;
  return readdirSync(path).reduce((total, entry) => total + diskBytes(join(path, entry)), 0);
}
