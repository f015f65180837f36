import { fork } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { setPriority } from 'node:os';
import type { ExtractedDocument } from '../extracted-document.ts';
import { ExtractionFailure } from './extraction-failure.ts';
import type { ExtractionJob, ExtractionMessage } from './extraction-process.ts';

export interface ExtractionLimits {
  timeoutMs: number;
  /** Resident memory of the extraction process, OCR's WebAssembly heap included. */
  memoryMb: number;
}

const ENTRY = new URL('./extraction-process.ts', import.meta.url);
const MEMORY_CHECK_MS = 100;

/**
 * Runs one extraction in a child process, off the server's event loop, under a time and a
 * memory limit: V8's heap is capped by `--max-old-space-size`, and the whole process (buffers
 * and WebAssembly memory are outside V8's heap) is watched through /proc and killed above the
 * limit. A runaway parse ends as an ExtractionFailure (422), never a crash of the server.
 */
export function runExtraction(
  job: ExtractionJob,
  limits: ExtractionLimits,
  options: { signal?: AbortSignal; onProgress?: (pagesDone: number, pagesTotal: number) => void },
): Promise<ExtractedDocument> {
  return new Promise((resolve, reject) => {
    const child = fork(ENTRY, [], {
      execArgv: [`--max-old-space-size=${limits.memoryMb}`],
      serialization: 'advanced',
      stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
    });
    try {
      // Below the server's own priority: on a small machine, chat streams go first.
      if (child.pid !== undefined) setPriority(child.pid, 10);
    } catch {
      // not permitted here: the extraction runs at normal priority
    }
    let outcome: { document: ExtractedDocument } | { error: Error } | undefined;
    const fail = (error: Error) => {
      outcome ??= { error };
      child.kill('SIGKILL');
    };
    const timer = setTimeout(() => {
      fail(
        new ExtractionFailure(
          'too_slow',
          `Reading the file took longer than ${Math.round(limits.timeoutMs / 1000)} s (INGEST_TIMEOUT_MS) and was stopped.`,
        ),
      );
    }, limits.timeoutMs);
    const watch = setInterval(async () => {
      const rssMb = await residentMb(child.pid);
      if (rssMb > limits.memoryMb) fail(tooMuchMemory(limits.memoryMb));
    }, MEMORY_CHECK_MS);
    const onAbort = () => fail(options.signal?.reason ?? new Error('aborted'));
    options.signal?.addEventListener('abort', onAbort, { once: true });

    child.on('message', (message: ExtractionMessage) => {
      if (message.type === 'progress') options.onProgress?.(message.pagesDone, message.pagesTotal);
      else if (message.type === 'done') outcome ??= { document: message.document };
      else outcome ??= { error: new ExtractionFailure(message.code, message.message) };
    });
    child.on('error', (error) => fail(error));
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      clearInterval(watch);
      options.signal?.removeEventListener('abort', onAbort);
      if (outcome && 'document' in outcome) return resolve(outcome.document);
      if (outcome) return reject(outcome.error);
      // Died without a word: V8 ran out of heap (it aborts the process) or the OS killed it.
      reject(
        signal === 'SIGABRT' || code === 134
          ? tooMuchMemory(limits.memoryMb)
          : new ExtractionFailure(
              'corrupt',
              'Reading the file failed unexpectedly; the file may be damaged.',
            ),
      );
    });
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
