import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { startParley } from './start-parley.ts';

/**
 * Vitest's globalSetup: one embedded database made by Parley's own first start, once per test
 * run, that startParley copies into any embedded data directory that has no database yet.
 *
 * A first start on a new data directory unpacks the shipped seed (~0.9 s of brotli), and the
 * job engine creates its schema (~0.3 s); copying the 40 MB takes 50–140 ms. The suite starts
 * Parley ~250 times on an embedded data directory that has no database yet (bench/RESULTS.md,
 * "CI time"). The copy is what an operator's second start sees, so what a test exercises is
 * unchanged; the first start itself stays tested where it is the subject (`freshDataDir` in
 * test/storage/embedded-seed.test.ts, and tests that spawn Parley themselves).
 */
declare module 'vitest' {
  export interface ProvidedContext {
    embeddedTemplate: string;
  }
}

export default async function makeEmbeddedTemplate(project: TestProject) {
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-template-'));
  try {
    const parley = await startParley({ dataDir, freshDataDir: true });
    const code = await parley.stop();
    if (code !== 0) throw new Error(`exit ${code}:\n${parley.output()}`);
  } catch (error) {
    rmSync(dataDir, { recursive: true, force: true });
    throw new Error('the embedded template did not start and stop cleanly', { cause: error });
  }
  project.provide('embeddedTemplate', join(dataDir, 'pg'));
  return () => rmSync(dataDir, { recursive: true, force: true });
}
