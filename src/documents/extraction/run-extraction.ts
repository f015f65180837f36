import { type ChildProcess, fork } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { setPriority } from 'node:os';
import type { ExtractedDocument } from '../extracted-document.ts';
import { ExtractionFailure } from './extraction-failure.ts';
import type { ExtractionJob, ExtractionMessage } from './extraction-process.ts';

export interface ExtractionLimits {
  timeoutMs: number;
  /** Resident memory of the extraction process, OCR's WebAssembly heap included. */
  memoryMb: number;
  /**
   * How long a process that finished a file waits for the next one before it exits; 0 for a
   * new process per file. A warm process reads a PDF about twice as fast as a new one (PDF.js
   * compiled and its modules loaded: bench/RESULTS.md, ingestion speed).
   */
  idleMs: number;
}

interface RunOptions {
  signal?: AbortSignal;
  onProgress?: (pagesDone: number, pagesTotal: number) => void;
}

const ENTRY = new URL('./extraction-process.ts', import.meta.url);
const MEMORY_CHECK_MS = 100;

/**
 * Runs extractions in child processes, off the server's event loop, under a time and a memory
 * limit: V8's heap is capped by `--max-old-space-size`, and the whole process (buffers and
 * WebAssembly memory are outside V8's heap) is watched through /proc and killed above the
 * limit. A runaway parse ends as an ExtractionFailure (422), never a crash of the server.
 *
 * A process that read its file without trouble is kept for the next one for `idleMs`; one
 * that failed, was stopped or was asked to stop is killed, so a hostile file never leaves
 * anything behind for the next upload. One file at a time per process.
 */
export class ExtractionProcesses {
  readonly #limits: ExtractionLimits;
  readonly #idle: { child: ChildProcess; timer: NodeJS.Timeout }[] = [];
  readonly #busy = new Set<ChildProcess>();

  constructor(limits: ExtractionLimits) {
    this.#limits = limits;
  }

  run(job: ExtractionJob, options: RunOptions = {}): Promise<ExtractedDocument> {
    const child = this.#take();
    this.#busy.add(child);
    return runOn(child, job, this.#limits, options).then(
      (document) => {
        this.#busy.delete(child);
        this.#keep(child);
        return document;
      },
      (error: unknown) => {
        this.#busy.delete(child);
        child.kill('SIGKILL');
        throw error;
      },
    );
  }

  /** Stops every process, idle or busy (a busy one's upload fails). */
  close(): void {
    for (const { child, timer } of this.#idle.splice(0)) {
      clearTimeout(timer);
      child.kill('SIGKILL');
    }
    for (const child of this.#busy) child.kill('SIGKILL');
  }

  #take(): ChildProcess {
    for (let idle = this.#idle.pop(); idle; idle = this.#idle.pop()) {
      clearTimeout(idle.timer);
      if (idle.child.exitCode === null && idle.child.signalCode === null) return idle.child;
    }
    const child = fork(ENTRY, [], {
      execArgv: [`--max-old-space-size=${this.#limits.memoryMb}`],
      serialization: 'advanced',
      stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
    });
    // Between jobs nobody else listens: an 'error' with no listener (a failed kill or IPC
    // write) would be thrown in the server. A process in that state is not kept.
    child.on('error', () => child.kill('SIGKILL'));
    try {
      // Below the server's own priority: on a small machine, chat streams go first.
      if (child.pid !== undefined) setPriority(child.pid, 10);
    } catch {
      // not permitted here: the extraction runs at normal priority
    }
    return child;
  }

  #keep(child: ChildProcess): void {
    if (this.#limits.idleMs <= 0 || child.exitCode !== null || child.signalCode !== null) {
      child.kill('SIGKILL');
      return;
    }
    const entry = {
      child,
      timer: setTimeout(() => {
        this.#idle.splice(this.#idle.indexOf(entry), 1);
        child.kill('SIGKILL');
      }, this.#limits.idleMs),
    };
    entry.timer.unref();
    this.#idle.push(entry);
  }
}

/** One job on `child`; resolves with its text, or rejects (the caller then kills the child). */
function runOn(
  child: ChildProcess,
  job: ExtractionJob,
  limits: ExtractionLimits,
  options: RunOptions,
): Promise<ExtractedDocument> {
  return new Promise((resolve, reject) => {
    let settled = false;
    const finish = (outcome: { document: ExtractedDocument } | { error: Error }) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearInterval(watch);
      options.signal?.removeEventListener('abort', onAbort);
      child.off('message', onMessage);
      child.off('error', onError);
      child.off('exit', onExit);
      if ('document' in outcome) resolve(outcome.document);
      else reject(outcome.error);
    };
    const timer = setTimeout(() => {
      finish({
        error: new ExtractionFailure(
          'too_slow',
          `Reading the file took longer than ${Math.round(limits.timeoutMs / 1000)} s (INGEST_TIMEOUT_MS) and was stopped.`,
        ),
      });
    }, limits.timeoutMs);
    const watch = setInterval(async () => {
      const rssMb = await residentMb(child.pid);
      if (rssMb > limits.memoryMb) finish({ error: tooMuchMemory(limits.memoryMb) });
    }, MEMORY_CHECK_MS);
    const onAbort = () => finish({ error: options.signal?.reason ?? new Error('aborted') });
    const onMessage = (message: ExtractionMessage) => {
      if (message.type === 'progress') options.onProgress?.(message.pagesDone, message.pagesTotal);
      else if (message.type === 'done') finish({ document: message.document });
      else finish({ error: new ExtractionFailure(message.code, message.message) });
    };
    const onError = (error: Error) => finish({ error });
    const onExit = (code: number | null, signal: NodeJS.Signals | null) =>
      // Died without a word: V8 ran out of heap (it aborts the process) or the OS killed it.
      finish({
        error:
          signal === 'SIGABRT' || code === 134
            ? tooMuchMemory(limits.memoryMb)
            : new ExtractionFailure(
                'corrupt',
                'Reading the file failed unexpectedly; the file may be damaged.',
              ),
      });
    if (options.signal?.aborted) return onAbort();
    options.signal?.addEventListener('abort', onAbort, { once: true });
    child.on('message', onMessage);
    child.once('error', onError);
    child.once('exit', onExit);
    child.send(job);
  });
}

function tooMuchMemory(memoryMb: number): ExtractionFailure {
  return new ExtractionFailure(
    'too_large',
    `Reading the file needed more than ${memoryMb} MB of memory (INGEST_MEMORY_MB) and was stopped.`,
  );
}

async function residentMb(pid: number | undefined): Promise<number> {
  if (pid === undefined) return 0;
  try {
    const status = await readFile(`/proc/${pid}/status`, 'latin1');
    const kb = /VmRSS:\s+(\d+)/.exec(status)?.[1];
    return kb ? Number(kb) / 1024 : 0;
  } catch {
    return 0; // not Linux, or already gone: the heap cap and the timeout still apply
  }
}
