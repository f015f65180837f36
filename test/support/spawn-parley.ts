import { type ChildProcess, type StdioOptions, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';

const ROOT = new URL('../../', import.meta.url);

/**
 * How `npm start` runs the server, read from package.json: the environment assignments in
 * front of `node` (allocator tuning), then node's own flags (heap tuning), then the entry file.
 */
function startCommand(root: URL = ROOT): { env: Record<string, string>; args: string[] } {
  const pkg = JSON.parse(readFileSync(new URL('package.json', root), 'utf8')) as {
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
  return { env, args: [...rest.slice(0, -1), new URL(entry, root).pathname] };
}

const START = startCommand();

/**
 * Spawns the server exactly as `npm start` runs it, so tests and benchmarks see what an
 * operator runs, with only the environment given here: never the caller's, never a
 * developer's `.env`.
 */
/**
 * Where a test's Parley looks for the embedded model when the test names no model: nothing
 * listens there. A first run starts downloading the default model at once, and a test must
 * never reach a host off this machine.
 */
export const NO_MODEL_URL = 'http://127.0.0.1:9/parley-tests-have-no-model.gguf';

/** Servers this test file started and that have not exited. */
const running = new Set<ChildProcess>();

/**
 * Kills the servers a test file left running (test/support/stop-left-servers.ts runs it after
 * every file): a test that forgets to stop its server, or fails before it can, must not leave
 * it beside the rest of the suite, holding a port, its data directory and a core. Answers how
 * many there were.
 */
export function killLeftServers(): number {
  const left = [...running].filter((child) => child.exitCode === null && child.signalCode === null);
  for (const child of left) child.kill('SIGKILL');
  running.clear();
  return left.length;
}

export function spawnParley(
  env: Record<string, string | undefined>,
  stdio: StdioOptions = ['ignore', 'pipe', 'pipe'],
  /** Another checkout to run (a benchmark comparing two commits); default: this one. */
  root?: URL,
  /** A command that runs node (a benchmark's `valgrind …`); default: node itself. */
  wrapper: readonly string[] = [],
): ChildProcess {
  const start = root ? startCommand(root) : START;
  const [command = process.execPath, ...wrapperArgs] = wrapper;
  const args = wrapper.length > 0 ? [...wrapperArgs, process.execPath, ...start.args] : start.args;
  const child = spawn(command, args, {
    env: {
      ...start.env,
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      HOST: '127.0.0.1',
      ENV_FILE: '/dev/null', // an empty file: no settings but these
      ...(env.LLM_BASE_URL || env.LLM_MODEL || env.LLM_MODEL_PATH
        ? {}
        : { LLM_MODEL: NO_MODEL_URL }),
      ...env,
    },
    stdio,
  });
  running.add(child);
  child.once('exit', () => running.delete(child));
  return child;
}
