import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES, type EngineEnv, engineEnv } from '../support/engines.ts';
import { extractionProcesses, isRunning } from '../support/extraction-processes.ts';
import { file, ingest, leftoverUploads, listedSources, PDFS } from '../support/ingest-client.ts';
import { multipartBody } from '../support/multipart.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';
import { waitFor } from '../support/wait-for.ts';

/**
 * A client that hangs up while its upload is being read: the extraction process is killed,
 * nothing is stored, the temporary file goes, and the extraction slot is free for the next
 * upload (INGEST_CONCURRENCY=1, so a leaked slot would block it).
 */
describe.each(ENGINES)(
  'an upload abandoned during extraction, %s engine',
  { timeout: 120_000 },
  (engine) => {
    let storage: EngineEnv;
    let parley: RunningParley;

    beforeAll(async () => {
      storage = await engineEnv(engine);
      parley = await startParley({
        env: { ...storage.env, INGEST_CONCURRENCY: '1' },
        startTimeoutMs: 120_000, // over 30 s seen when the shared machine's load is ~25
      });
    }, 150_000);
    afterAll(async () => {
      await parley?.stop();
      await storage?.cleanup();
    });

    it('kills the extraction process, stores nothing and leaves no upload behind', async () => {
      const serverPid = parley.process.pid as number;
      expect(extractionProcesses(serverPid)).toEqual([]);

      // The whole 176-page PDF is sent; the answer is never read.
      const { body, contentType } = multipartBody([
        file('abandoned.pdf', readFileSync(`${PDFS}/rfc2616.pdf`)),
      ]);
      const req = request(`${parley.url}/ingest`, {
        method: 'POST',
        headers: { 'content-type': contentType, 'content-length': String(body.length) },
      });
      req.on('error', () => {}); // the hang-up is ours
      req.end(body);

      // Extraction has started once the server has forked its extraction process (which then
      // needs seconds to start Node, load PDF.js and read 176 pages): hang up then.
      await waitFor(() => extractionProcesses(serverPid).length === 1, 60_000);
      const [extraction] = extractionProcesses(serverPid);
      expect(leftoverUploads(parley)).toHaveLength(1);
      req.destroy();

      await waitFor(() => !isRunning(extraction as number), 10_000);
      expect(extractionProcesses(serverPid)).toEqual([]);
      await waitFor(() => leftoverUploads(parley).length === 0, 10_000);
      await parley.settled();
      expect(parley.logs.some((line) => line.msg === 'document ingested')).toBe(false);
      expect(await listedSources(parley)).not.toContain('abandoned.pdf');
      // A hang-up is the client's doing: no server error is logged for it.
      expect(parley.logs.filter((line) => line.level >= 50)).toEqual([]);

      // The one extraction slot was given back: the next upload is served.
      expect(await ingest(parley, [file('after.txt', 'still serving uploads')])).toMatchObject({
        status: 200,
        body: { source: 'after.txt' },
      });
      expect(await listedSources(parley)).toEqual(['after.txt']);
      expect(leftoverUploads(parley)).toEqual([]);
    });
  },
);
