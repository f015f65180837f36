import { existsSync } from 'node:fs';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The files that took longest in CI (seconds in `.ci/vitest-report.json`, 2026-11-29 12:41, a
 * loaded run: 47-208 s each; shared-buffers-auto, new, 45 s on a quiet machine), longest first. Two
 * workers take files in order, so a long file started last keeps one worker busy while the
 * other has finished: on a clean clone vitest has no timings and orders by file size, and
 * several of these are short files that wait on leases or start many replicas. Starting them
 * first is "longest job first" scheduling; a file missing here
 * only costs balance.
 */
const SLOWEST = [
  'test/telegram/upstream-endings.test.ts',
  'test/scale-out/start-together.test.ts',
  'test/tools/vision.test.ts',
  'test/models/first-run.test.ts',
  'test/documents/search-hidden-rows.test.ts',
  'test/http/lifecycle.test.ts',
  'test/tools/web-search.test.ts',
  'test/http/bad-input-walk.test.ts',
  'test/telegram/delivery.test.ts',
  'test/telegram/chat.test.ts',
  'test/http/chat-options.test.ts',
  'test/ops/admin-cli.test.ts',
  'test/tools/crag.test.ts',
  'test/documents/concurrent-uploads.test.ts',
  'test/telegram/killed-holder.test.ts',
  'test/documents/ingest-limits.test.ts',
  'test/storage/shared-buffers-auto.test.ts',
  'test/ops/backup.test.ts',
  'test/jobs/memory-jobs.test.ts',
  'test/http/web-session-guards.test.ts',
  'test/http/chat.test.ts',
  'test/accounts/limits.test.ts',
  'test/jobs/background-jobs.test.ts',
  'test/ops/startup-failures.test.ts',
  'test/automations/crash.test.ts',
  'test/ops/shutdown-mid-backfill.test.ts',
  'test/documents/ingest-http.test.ts',
  'test/runs/long-answer-lease.test.ts',
  'test/scale-out/replicas.test.ts',
  'test/automations/time-limit.test.ts',
  'test/web/conversations.test.ts',
  'test/http/langsmith.test.ts',
  'test/documents/abandoned-writes.test.ts',
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
