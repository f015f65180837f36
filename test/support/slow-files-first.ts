import { existsSync } from 'node:fs';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The files that take longest (their CI times of 2026-11-29, and for those changed since, the
 * times measured when they were changed), longest first. Two workers take files in order, so a
 * long file started last keeps one worker busy while the other has finished: on a clean clone
 * vitest has no timings and orders by file size, and several of these are short files that
 * wait on leases or start many replicas. Starting them first is "longest job first"
 * scheduling; a file missing here only costs balance.
 */
const SLOWEST = [
  'test/scale-out/start-together.test.ts',
  'test/telegram/chat.test.ts',
  'test/jobs/background-jobs.test.ts',
  'test/automations/time-limit.test.ts',
  'test/web/web-client.test.ts',
  'test/jobs/memory-jobs.test.ts',
  'test/telegram/delivery.test.ts',
  'test/documents/ingest-limits.test.ts',
  'test/http/bad-input-walk.test.ts',
  'test/ops/backup.test.ts',
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
