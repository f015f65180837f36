import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES, type EngineEnv, engineEnv } from '../support/engines.ts';
import { extractionProcesses, isRunning } from '../support/extraction-processes.ts';
import { file, ingest, leftoverUploads, listedSources, PDFS } from '../support/ingest-client.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';
import { waitFor } from '../support/wait-for.ts';

const START_TIMEOUT_MS = 120_000;
const IDLE_MS = 3_000;

/**
 * Extraction processes are kept warm between uploads (INGEST_PROCESS_IDLE_MS): the next file
 * is read by the same process, one that failed is never reused, an idle one goes after the
 * idle time, and none outlives the server.
 */
describe.each(ENGINES)('extraction processes kept between uploads, %s engine', (engine) => {
  let storage: EngineEnv;
  let parley: RunningParley;
  let fresh: RunningParley;

  beforeAll(
    async () => {
      storage = await engineEnv(engine);
      parley = await startParley({
        env: { ...storage.env, INGEST_PROCESS_IDLE_MS: String(IDLE_MS), INGEST_CONCURRENCY: '1' },
        startTimeoutMs: START_TIMEOUT_MS,
      });
      fresh = await startParley({
        env: { ...storage.env, INGEST_PROCESS_IDLE_MS: '0' },
        startTimeoutMs: START_TIMEOUT_MS,
      });
    },
    2 * START_TIMEOUT_MS + 30_000,
  );
  afterAll(async () => {
    await parley?.stop();
    await fresh?.stop();
    await storage?.cleanup();
  });

  it('reads the next upload in the same process, and lets it go when idle', async () => {
    const serverPid = parley.process.pid as number;
    const first = await ingest(parley, [file(`${engine}-first.txt`, 'the first document')]);
    expect(first).toMatchObject({ status: 200, body: { chunks: 1 } });
    const [warm] = extractionProcesses(serverPid);
    expect(warm).toBeDefined();

    const second = await ingest(parley, [
      file(`${engine}-second.pdf`, readFileSync(`${PDFS}/tracemonkey.pdf`)),
    ]);
    expect(second).toMatchObject({ status: 200, body: { source: `${engine}-second.pdf` } });
    expect(extractionProcesses(serverPid)).toEqual([warm]);
    expect(await listedSources(parley)).toEqual(
      expect.arrayContaining([`${engine}-first.txt`, `${engine}-second.pdf`]),
    );

    await waitFor(() => !isRunning(warm as number), IDLE_MS + 10_000);
    expect(extractionProcesses(serverPid)).toEqual([]);
  });

  it('never reuses a process that failed a file: the next upload gets a new one', async () => {
    const serverPid = parley.process.pid as number;
    await ingest(parley, [file(`${engine}-before.txt`, 'warms a process')]);
    const [before] = extractionProcesses(serverPid);
    expect(before).toBeDefined();

    const corrupt = await ingest(parley, [
      file(`${engine}-bug.pdf`, readFileSync(`${PDFS}/bug1020226.pdf`)),
    ]);
    expect(corrupt).toEqual({
      status: 422,
      body: { detail: expect.stringContaining('damaged or truncated') },
    });
    await waitFor(() => !isRunning(before as number), 10_000);

    expect(await ingest(parley, [file(`${engine}-after.txt`, 'a new process')])).toMatchObject({
      status: 200,
    });
    const [after] = extractionProcesses(serverPid);
    expect(after).toBeDefined();
    expect(after).not.toBe(before);
    expect(await listedSources(parley)).not.toContain(`${engine}-bug.pdf`);
    expect(leftoverUploads(parley)).toEqual([]);
  });

  it('with INGEST_PROCESS_IDLE_MS=0, keeps no process after an upload', async () => {
    const serverPid = fresh.process.pid as number;
    expect(await ingest(fresh, [file(`${engine}-once.txt`, 'one process')])).toMatchObject({
      status: 200,
    });
    await waitFor(() => extractionProcesses(serverPid).length === 0, 10_000);
  });

  it('stops a waiting process with the server', async () => {
    const serverPid = parley.process.pid as number;
    await ingest(parley, [file(`${engine}-last.txt`, 'kept warm')]);
    const [waiting] = extractionProcesses(serverPid);
    expect(waiting).toBeDefined();
    expect(await parley.stop()).toBe(0);
    await waitFor(() => !isRunning(waiting as number), 10_000);
  });
});
