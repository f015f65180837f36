import { readFileSync } from 'node:fs';

/**
 * How `npm start` runs the server, read from package.json, so that tests and benchmarks
 * spawn exactly what an operator runs: the environment assignments in front of `node`
 * (allocator tuning), then node's own flags (heap tuning), then the entry file.
 */
export interface StartCommand {
  env: Record<string, string>;
  /** Arguments for `process.execPath`, ending with the absolute path of the entry file. */
  args: string[];
}

const ROOT = new URL('../../', import.meta.url);

export function startCommand(): StartCommand {
  const pkg = JSON.parse(readFileSync(new URL('package.json', ROOT), 'utf8')) as {
    scripts: { start: string };
  };
  const words = pkg.scripts.start.trim().split(/\s+/);
  const env: Record<string, string> = {};
  let i = 0;
  for (; i < words.length && /^[A-Z_][A-Z0-9_]*=/.test(words[i] as string); i++) {
    const [name, ...value] = (words[i] as string).split('=');
    env[name as string] = value.join('=');
  }
  if (words[i] !== 'node') throw new Error(`unexpected start script: ${pkg.scripts.start}`);
  const rest = words.slice(i + 1);
  const entry = rest.at(-1);
  if (!entry?.endsWith('.ts'))
    throw new Error(`start script has no entry file: ${pkg.scripts.start}`);
  return { env, args: [...rest.slice(0, -1), new URL(entry, ROOT).pathname] };
}
