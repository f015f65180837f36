import { once } from 'node:events';
import { cpSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { TestProject } from 'vitest/node';
import { spawnParley } from './spawn-parley.ts';

/**
 * Vitest's globalSetup: one embedded database made by Parley's own first start, once per test
 * run, that startParley copies into each new data directory it makes.
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
  const child = spawnParley({ PORT: '0', DATA_DIR: dataDir, LOG_LEVEL: 'info' });
  const exited = once(child, 'exit');
  let output = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString('utf8');
  });
  const listening = new Promise<void>((resolve) => {
    if (!child.stdout) throw new Error('spawn gave no stdout');
    createInterface({ input: child.stdout }).on('line', (line) => {
      output += `${line}\n`;
      if (line.includes('"msg":"Parley is listening"')) resolve();
    });
  });
  const timeout = setTimeout(() => child.kill('SIGKILL'), 90_000);
  await Promise.race([listening, exited]);
  child.kill('SIGTERM');
  const [code] = await exited;
  clearTimeout(timeout);
  const pgDir = join(dataDir, 'pg');
  if (code !== 0 || !existsSync(join(pgDir, 'PG_VERSION'))) {
    rmSync(dataDir, { recursive: true, force: true });
    throw new Error(
      `the embedded template did not start and stop cleanly (exit ${code}):\n${output}`,
    );
  }
  project.provide('embeddedTemplate', pgDir);
  return () => rmSync(dataDir, { recursive: true, force: true });
}

/** Gives a new data directory the template's database (see above). */
export function copyEmbeddedTemplate(template: string, dataDir: string): void {
  cpSync(template, join(dataDir, 'pg'), { recursive: true });
}
