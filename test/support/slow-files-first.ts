import { existsSync } from 'node:fs';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The files that took longest in CI (seconds in `.ci/vitest-report.json`, 2026-11-29 10:13, a
 * loaded run: 41-172 s each; upstream-endings, new, 156 s in the next), longest first. Two
 * workers take files in order, so a long file started last keeps one worker busy while the
 * other has finished: on a clean clone vitest has no timings and orders by file size, and
 * several of these are short files that wait on leases or start many replicas. Starting them
 * first is "longest job first" scheduling; a file missing here
 * only costs balance.
 */
const SLOWEST = [
  'test/telegram/upstream-endings.test.ts',
  'test/scale-out/start-together.test.ts',
  'test/http/lifecycle.test.ts',
  'test/documents/ingest-limits.test.ts',
  'test/telegram/chat.test.ts',
  'test/documents/concurrent-uploads.test.ts',
  'test/documents/search-hidden-rows.test.ts',
  'test/jobs/memory-jobs.test.ts',
  'test/models/first-run.test.ts',
  'test/tools/vision.test.ts',
  'test/http/bad-input-walk.test.ts',
  'test/http/chat-options.test.ts',
  'test/telegram/delivery.test.ts',
  'test/telegram/killed-holder.test.ts',
  'test/http/chat.test.ts',
  'test/jobs/background-jobs.test.ts',
  'test/automations/crash.test.ts',
  'test/automations/time-limit.test.ts',
  'test/runs/long-answer-lease.test.ts',
  'test/scale-out/replicas.test.ts',
  'test/scale-out/resume-replicas.test.ts',
  'test/http/log-privacy-wave.test.ts',
];

const ROOT = new URL('../../', import.meta.url);
const gone = SLOWEST.filter((path) => !existsSync(new URL(path, ROOT)));
// A renamed file would silently lose its place: say so where it is listed.
if (gone.length > 0)
  throw new Error(`test/support/slow-files-first.ts lists missing files: ${gone}`);

export default class SlowFilesFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (spec: TestSpecification) => {
      const at = SLOWEST.findIndex((path) => spec.moduleId.endsWith(`/${path}`));
      return at === -1 ? SLOWEST.length : at;
    };
    // Array.prototype.sort is stable: the rest keep vitest's own order.
    return sorted.sort((a, b) => rank(a) - rank(b));
  }
}
