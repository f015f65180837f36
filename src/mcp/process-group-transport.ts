import { type ChildProcess, spawn } from 'node:child_process';
import { getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ReadBuffer, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

/** Lines of a server's stderr kept for the administrator (why it is down). */
const STDERR_LINES = 20;
const STDERR_LINE_MAX = 500;
/** After SIGTERM to the group, how long before SIGKILL. */
const KILL_GRACE_MS = 2_000;

export interface StdioCommand {
  command: string;
  args: string[];
  /** Only these are added to the minimal environment (HOME, LOGNAME, PATH, SHELL, TERM, USER). */
  env: Record<string, string>;
}

/**
 * The MCP stdio transport, with the server in its own process group: the SDK's transport
 * kills only its direct child, so a server started through a wrapper (`npx`, a shell
 * script) would leave its real process behind. Here closing signals the whole group
 * (SIGTERM, then SIGKILL), and stderr is always read (a full pipe would block the server),
 * its last lines kept to say why the server stopped.
 */
export class ProcessGroupTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  readonly #command: StdioCommand;
  readonly #buffer = new ReadBuffer();
  readonly #stderr: string[] = [];
  #partialLine = '';
  #child: ChildProcess | undefined;
  #exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  #exited: Promise<void> | undefined;

  constructor(command: StdioCommand) {
    this.#command = command;
  }

  /** The server's last stderr lines (its own words: for the administrator only). */
  get stderrTail(): string {
    return [...this.#stderr, this.#partialLine].filter(Boolean).join('\n');
  }

  /** How the process ended, once it has. */
  get exit(): { code: number | null; signal: NodeJS.Signals | null } | undefined {
    return this.#exit;
  }

  get pid(): number | undefined {
    return this.#child?.pid;
  }

  async start(): Promise<void> {
    if (this.#child) throw new Error('already started');
    const child = spawn(this.#command.command, this.#command.args, {
      env: { ...getDefaultEnvironment(), ...this.#command.env },
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true, // its own process group, killed as one
      shell: false,
    });
    this.#child = child;
    this.#exited = new Promise((resolve) => {
      child.once('close', (code, signal) => {
        this.#exit = { code, signal };
        resolve();
        this.onclose?.();
      });
    });
    child.stdout?.on('data', (chunk: Buffer) => {
      try {
        this.#buffer.append(chunk);
        for (;;) {
          const message = this.#buffer.readMessage();
          if (message === null) break;
          this.onmessage?.(message);
        }
      } catch (error) {
        this.onerror?.(error as Error);
      }
    });
    child.stderr?.on('data', (chunk: Buffer) => this.#keepStderr(chunk.toString('utf8')));
    for (const stream of [child.stdin, child.stdout, child.stderr]) {
      stream?.on('error', (error) => this.onerror?.(error));
    }
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', reject);
    });
  }

  async send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.#child?.stdin;
    if (!stdin || this.#exit) throw new Error('the server process is not running');
    await new Promise<void>((resolve, reject) => {
      stdin.write(serializeMessage(message), (error) => (error ? reject(error) : resolve()));
    });
  }

  /** Ends the whole process group: SIGTERM, then SIGKILL after a grace period. */
  async close(): Promise<void> {
    const child = this.#child;
    if (!child?.pid || this.#exit) return;
    child.stdin?.end();
    killGroup(child.pid, 'SIGTERM');
    const timer = setTimeout(() => killGroup(child.pid as number, 'SIGKILL'), KILL_GRACE_MS);
    await this.#exited;
    clearTimeout(timer);
    // The leader is gone; a child it left that ignored SIGTERM is not.
    killGroup(child.pid, 'SIGKILL');
  }

  #keepStderr(text: string): void {
    const lines = (this.#partialLine + text).split('\n');
    this.#partialLine = (lines.pop() ?? '').slice(0, STDERR_LINE_MAX);
    for (const line of lines) {
      if (line.trim() === '') continue;
      this.#stderr.push(line.slice(0, STDERR_LINE_MAX));
      if (this.#stderr.length > STDERR_LINES) this.#stderr.shift();
    }
  }
}

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // already gone
  }
}
