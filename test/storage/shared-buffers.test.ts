import { describe, expect, it } from 'vitest';
import { autoSharedBuffers } from '../../src/storage/shared-buffers.ts';

const MB = 1024 * 1024;
const GB = 1024 * MB;

/** What EMBEDDED_DB_SHARED_BUFFERS=auto gives for a vector index's size on a machine's memory. */
describe('autoSharedBuffers', () => {
  it.each([
    ['no vector index', 0, 24 * GB, '16MB'],
    ['an index that fits the floor with room', 12 * MB, 24 * GB, '16MB'],
    ['an index a quarter larger than it, with room', 100 * MB, 24 * GB, '125MB'],
    ['an index over the 1GB ceiling', 2 * GB, 64 * GB, '1024MB'],
    ['an index larger than an eighth of a small machine', 200 * MB, 1 * GB, '128MB'],
    ['a machine so small that an eighth is below the floor', 200 * MB, 64 * MB, '16MB'],
  ])('%s', (_case, indexBytes, machineBytes, expected) => {
    expect(autoSharedBuffers(indexBytes, machineBytes)).toBe(expected);
  });
});
