import { type ChildProcess, spawn } from 'node:child_process';
import { getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import { serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  isJSONRPCErrorResponse,
  isJSONRPCRequest,
  isJSONRPCResultResponse,
  type JSONRPCMessage,
  type RequestId,
} from '@modelcontextprotocol/sdk/types.js';
import { ANSWER_TOO_LARGE, AnswerTooLargeError } from './answer-too-large.ts';
import { MessageLines } from './message-lines.ts';

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
  readonly #lines = new MessageLines();
  /** Requests sent and not answered yet: an answer too long to read is one of them. */
  readonly #awaiting = new Set<RequestId>();
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
      for (const outcome of this.#lines.push(chunk)) {
        if ('message' in outcome) this.#received(outcome.message);
        else if ('error' in outcome) this.onerror?.(outcome.error);
        else this.#oversized(outcome.oversized);
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
    if (isJSONRPCRequest(message)) this.#awaiting.add(message.id);
    // A call given up on (timeout, the chat ended) is answered by nobody: not awaited.
    else if ('method' in message && message.method === 'notifications/cancelled') {
      const id = (message.params as { requestId?: RequestId } | undefined)?.requestId;
      if (id !== undefined) this.#awaiting.delete(id);
    }
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

  #received(message: JSONRPCMessage): void {
    if (isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message)) {
      if (message.id !== undefined) this.#awaiting.delete(message.id);
    }
    this.onmessage?.(message);
  }

  /**
   * A message too long to read: when it answers a request (its id at either end, as servers
   * write it first or last; or the only request awaiting an answer), that request gets an
   * error now instead of waiting out its timeout.
   */
  #oversized({ bytes, head, tail }: { bytes: number; head: string; tail: string }): void {
    const id = answeredId(head, tail, this.#awaiting);
    const error = new AnswerTooLargeError(bytes);
    if (id === undefined) {
      this.onerror?.(error);
      return;
    }
    this.#received({
      jsonrpc: '2.0',
      id,
      error: { code: ANSWER_TOO_LARGE, message: error.message },
    });
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

/** Which awaited request a message too long to parse answers, from its first and last bytes. */
function answeredId(head: string, tail: string, awaiting: Set<RequestId>): RequestId | undefined {
  const ids = [
    // {"jsonrpc":"2.0","id":7,"result":… (id first)
    /^\s*\{\s*"jsonrpc"\s*:\s*"2\.0"\s*,\s*"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")/.exec(head)?.[1],
    // …},"jsonrpc":"2.0","id":7} (id last: the SDK's own servers)
    /"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")\s*\}\s*$/.exec(tail)?.[1],
  ];
  for (const raw of ids) {
    if (raw === undefined) continue;
    const id = JSON.parse(raw) as RequestId;
    if (awaiting.has(id)) return id;
  }
  return awaiting.size === 1 ? [...awaiting][0] : undefined;
}
