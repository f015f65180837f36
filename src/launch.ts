import cluster from 'node:cluster';
import { rm } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import {
  assertProtected,
  type Config,
  ConfigError,
  parseConfig,
  readEnvironment,
  workerCount,
} from './config.ts';
import { createLogger } from './logger.ts';
import { serveClusterMetrics } from './metrics/cluster-metrics.ts';
import {
  CANNOT_START_EXIT_CODE,
  describeStartupFailure,
  isLastingStartupFailure,
} from './startup-failure.ts';
import { DataDirLockedError } from './storage/data-dir-lock.ts';
import { superviseWorkers } from './workers.ts';

/** Once read: a failure to start is described with the settings it involves. */
let config: Config | undefined;

/**
 * What `npm start` runs (src/start.ts loads it): reads the configuration, then runs the server
 * in this process, or (PARLEY_WORKERS > 1) becomes a primary that runs that many server
 * processes on one port.
 * The server's modules are loaded only where it runs, so the primary stays small.
 */
async function start(): Promise<void> {
  const settings = parseConfig(readEnvironment());
  config = settings;
  assertProtected(settings);
  if (!cluster.isWorker) await buildWebClientIfStale(settings.LOG_LEVEL);
  const workers = workerCount(settings, availableParallelism());
  if (workers === 1 || cluster.isWorker) {
    const { main } = await import('./main.ts');
    return main(settings);
  }
  const uploadsDir = join(settings.DATA_DIR, 'uploads');
  await rm(uploadsDir, { recursive: true, force: true }); // what a previous run left
  if (settings.METRICS_ENABLED) serveClusterMetrics();
  const logger = createLogger(settings.LOG_LEVEL).child({ role: 'primary' });
  if (!settings.LLM_BASE_URL) {
    logger.warn(
      { workers },
      'every worker loads its own copy of the embedded model: set LLM_BASE_URL to share a model server',
    );
  }
  superviseWorkers({
    count: workers,
    logger,
    graceMs: settings.SHUTDOWN_GRACE_MS,
    uploadsDir,
    onStopped: (code) => process.exit(code),
  });
}

/**
 * `npm start` on a fresh clone serves the page: the web client is built here when web/dist is
 * missing or older than its sources (`npm install` builds it too). A failed build is logged
 * and the API is served anyway; `/` then says how to build the page.
 */
async function buildWebClientIfStale(level: Parameters<typeof createLogger>[0]): Promise<void> {
  const web = await import('../web/build.ts');
  if (!web.hasWebSources() || web.webClientIsCurrent()) return;
  const logger = createLogger(level).child({ component: 'web-client' });
  try {
    const started = performance.now();
    const files = await web.buildWebClient();
    logger.info(
      { ms: Math.round(performance.now() - started), files: files.map((file) => file.name) },
      'web client built',
    );
  } catch (error) {
    logger.error({ err: error }, 'could not build the web client: run `node web/build.ts`');
  }
}

start().catch((error: unknown) => {
  // Configuration, lock, port, directory and database-server problems are the operator's to
  // fix: one clear line, no stack. Anything else is a defect, and its stack is wanted.
  const described = config && describeStartupFailure(error, config);
  if (error instanceof ConfigError || error instanceof DataDirLockedError) {
    process.stderr.write(`parley: ${error.message}\n`);
  } else if (described) {
    process.stderr.write(`parley: ${described}\n`);
  } else {
    process.stderr.write(
      `parley: could not start: ${error instanceof Error ? error.stack : error}\n`,
    );
  }
  // A worker that every replacement would repeat tells the primary so, which then stops.
  const lasting =
    error instanceof ConfigError ||
    error instanceof DataDirLockedError ||
    (described !== undefined && isLastingStartupFailure(error));
  process.exit(cluster.isWorker && lasting ? CANNOT_START_EXIT_CODE : 1);
});
