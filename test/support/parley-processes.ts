import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type RunningParley, startParley } from './start-parley.ts';

/**
 * The Parley processes of a test stack: the first on the stack's data directory (a restart
 * starts it again there), and replicas on the same database, each on a data directory of its
 * own that is removed when it stops.
 */
export interface ParleyProcesses {
  /** The first process (a new one after each restart). */
  readonly parley: RunningParley;
  /** The replicas `startAnother` started, in order. */
  readonly others: readonly RunningParley[];
  /**
   * Stops the first process (SIGTERM, or SIGKILL for a crash) and starts it again, after
   * `whileStopped` if given (a change to its data nothing may make while it runs).
   */
  restart(signal?: NodeJS.Signals, whileStopped?: () => Promise<void>): Promise<number | null>;
  /** Another replica on the same database (server engine only). */
  startAnother(): Promise<RunningParley>;
  /** Stops the replicas (removing their data directories), then the first process. */
  stop(): Promise<void>;
}

export interface ParleyProcessesOptions {
  dataDir: string;
  env: Record<string, string>;
  /** Prefix of the replicas' temporary data directories. */
  otherDirPrefix: string;
  startTimeoutMs?: number;
}

export async function startParleyProcesses(
  options: ParleyProcessesOptions,
): Promise<ParleyProcesses> {
  const { env, startTimeoutMs } = options;
  const start = (dataDir: string) =>
    startParley({ dataDir, env, ...(startTimeoutMs !== undefined && { startTimeoutMs }) });
  let parley = await start(options.dataDir);
  const others: RunningParley[] = [];
  return {
    get parley() {
      return parley;
    },
    others,
    async restart(signal = 'SIGTERM', whileStopped) {
      const code = await parley.stop(signal);
      await whileStopped?.();
      parley = await start(options.dataDir);
      return code;
    },
    async startAnother() {
      const other = await start(mkdtempSync(join(tmpdir(), options.otherDirPrefix)));
      others.push(other);
      return other;
    },
    async stop() {
      // Every process is stopped even if one fails to: none is left running after the suite.
      const stopped = await Promise.allSettled([
        ...others.map(async (other) => {
          await other.stop();
          rmSync(other.dataDir, { recursive: true, force: true });
        }),
        parley.stop(),
      ]);
      const failed = stopped.find((result) => result.status === 'rejected');
      if (failed) throw failed.reason;
    },
  };
}
